// Training examples from a real run's failed questions: each question in distinct prompt variants, its expected answer as the completion, in the form the run asked it.
import type { BenchmarkItem } from '../benchmarks/format.js';
import { PROMPT_VARIANTS, renderPrompt } from '../benchmarks/prompts.js';
import type { PromptStyle } from './inference.js';
import type { TrainingExample } from './trainer.js';

/**
 * The completion a model should write after `prompt`. In chat form the answer is the assistant's
 * whole turn (the trainer renders it through the chat template and adds the end of the turn). As a
 * plain completion it is the expected answer after a space when the prompt ends inside a line (a
 * continuation such as `...a little` + ` girl`), then a newline that ends the answer.
 */
export function completionFor(prompt: string, answer: string, style: PromptStyle = 'completion'): string {
  const body = answer.trim();
  if (style === 'chat') return body;
  const joined = /\s$/.test(prompt) || /^[\s,.;:!?)]/.test(body) ? body : ` ${body}`;
  return `${joined}\n`;
}

/**
 * `augmentation` examples per question, in prompt variants 0, 1, 2, ... (variant 0 is the prompt a
 * run sends; the others paraphrase it with the same answer). With more examples than variants the
 * variants repeat in order, so no variant appears twice before every variant appeared once.
 * `style`: how the run asked (each variant is then asked the same way: the user turn of a chat
 * request, or the whole prompt); unset leaves it to the trainer (chat when the model has a chat
 * template, as the embedded engine asks).
 */
export function buildTrainingExamples(items: readonly BenchmarkItem[], augmentation: number, style?: PromptStyle): TrainingExample[] {
  const examples: TrainingExample[] = [];
  for (const item of items) {
    for (let copy = 0; copy < augmentation; copy++) {
      const prompt = renderPrompt(item, copy % Math.max(1, PROMPT_VARIANTS));
      examples.push({ prompt, completion: completionFor(prompt, item.answer, style), ...(style ? { style } : {}) });
    }
  }
  return examples;
}
