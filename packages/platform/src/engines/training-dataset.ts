// Training examples from a real run's failed questions: each question in distinct prompt variants, its expected answer as the completion.
import type { BenchmarkItem } from '../benchmarks/format.js';
import { PROMPT_VARIANTS, renderPrompt } from '../benchmarks/prompts.js';
import type { TrainingExample } from './trainer.js';

/**
 * The completion a model should write after `prompt`: the expected answer, after a space when the
 * prompt ends inside a line (a continuation such as `...a little` + ` girl`), then a newline that
 * ends the answer.
 */
export function completionFor(prompt: string, answer: string): string {
  const body = answer.trim();
  const joined = /\s$/.test(prompt) || /^[\s,.;:!?)]/.test(body) ? body : ` ${body}`;
  return `${joined}\n`;
}

/**
 * `augmentation` examples per question, in prompt variants 0, 1, 2, ... (variant 0 is the prompt a
 * run sends; the others paraphrase it with the same answer). With more examples than variants the
 * variants repeat in order, so no variant appears twice before every variant appeared once.
 */
export function buildTrainingExamples(items: readonly BenchmarkItem[], augmentation: number): TrainingExample[] {
  const examples: TrainingExample[] = [];
  for (const item of items) {
    for (let copy = 0; copy < augmentation; copy++) {
      const prompt = renderPrompt(item, copy % Math.max(1, PROMPT_VARIANTS));
      examples.push({ prompt, completion: completionFor(prompt, item.answer) });
    }
  }
  return examples;
}
