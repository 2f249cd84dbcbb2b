// The prompt a run sends for a benchmark item, and paraphrased variants of it for training-set augmentation.
import { choiceLetter, scorerOf, type BenchmarkItem } from './format.js';

/** The question with its lettered choices, when it has some. */
function body(item: BenchmarkItem): string {
  if (!item.choices) return item.question;
  const lines = item.choices.map((choice, index) => `${choiceLetter(index)}. ${choice}`);
  return `${item.question}\n${lines.join('\n')}`;
}

/**
 * Templates around the question. Variant 0 is the question as written, so a completion-style
 * benchmark (a story to continue) is sent verbatim. The others only put words before it: every
 * variant ends exactly as variant 0 does, so the answer follows the same text in each (a small
 * completion model trained on answer-ending paraphrases such as "...\nAnswer:" learned them and
 * not the prompt it is tested on).
 */
const TEMPLATES: ReadonlyArray<(text: string) => string> = [
  (text) => text,
  (text) => `Question: ${text}`,
  (text) => `Answer the question.\n${text}`,
  (text) => `Q: ${text}`,
  (text) => `Here is a question.\n\n${text}`,
];

/** How many distinct prompts {@link renderPrompt} makes for one item. */
export const PROMPT_VARIANTS = TEMPLATES.length;

/**
 * The prompt for `item`: variant 0 is what a run sends; variants 1 to PROMPT_VARIANTS - 1 say the
 * same question in other words, with the same expected answer. A multiple-choice item lists its
 * choices as "A. ..." lines and asks for the letter. Variants wrap modulo PROMPT_VARIANTS.
 */
export function renderPrompt(item: BenchmarkItem, variant = 0): string {
  const index = ((Math.trunc(variant) % PROMPT_VARIANTS) + PROMPT_VARIANTS) % PROMPT_VARIANTS;
  let text = body(item);
  if (scorerOf(item) === 'choice' && item.choices) text += '\nAnswer with the letter of the right choice.';
  return TEMPLATES[index]!(text);
}
