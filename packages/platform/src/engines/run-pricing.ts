// What a run on a real inference engine costs: the quote before it starts and the charge for its tokens.
import { roundCredits } from '@verdict/contract/contract';
import type { BenchmarkItem } from '../benchmarks/format.js';
import { acceptedAnswers } from '../benchmarks/scorers.js';
import { estimateTokens, generationBudget } from './inference.js';

/** Prompt-side tokens a chat template or special tokens may add to a question, for the estimate. */
const TEMPLATE_OVERHEAD_TOKENS = 32;

/**
 * The price quoted before a run: every question's prompt (estimated tokens plus template overhead)
 * and its whole generation budget, at `creditsPer1kTokens`, rounded up to the cent (at least 0.01).
 * It depends on the benchmark only, so one quote holds for every model; the run is charged its
 * real token usage at the same rate, never more than this quote.
 */
export function estimateRunCredits(
  questions: ReadonlyArray<{ prompt: string; item: BenchmarkItem }>,
  creditsPer1kTokens: number,
): number {
  let tokens = 0;
  for (const { prompt, item } of questions) {
    tokens += estimateTokens(prompt) + TEMPLATE_OVERHEAD_TOKENS + generationBudget(estimateTokens(longestAnswer(item)), item.max_tokens);
  }
  return Math.max(0.01, chargeFor(tokens, creditsPer1kTokens));
}

/** The longest accepted answer: the generation budget must hold any of them. */
export function longestAnswer(item: BenchmarkItem): string {
  return acceptedAnswers(item).reduce((a, b) => (b.length > a.length ? b : a));
}

/** Credits for `tokens` at `creditsPer1kTokens`, rounded up to the cent. */
export function chargeFor(tokens: number, creditsPer1kTokens: number): number {
  return roundCredits(Math.ceil(((tokens / 1000) * creditsPer1kTokens - 1e-9) * 100) / 100);
}
