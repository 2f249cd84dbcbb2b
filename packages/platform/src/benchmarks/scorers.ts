// Scoring a model's raw output against a benchmark item: what was extracted as its answer, and a score from 0 to 1.
import { choiceLetter, parseNumber, scorerOf, type BenchmarkItem } from './format.js';

export interface ScoredAnswer {
  /** The answer read from the output ('' when none could be read). */
  extracted: string;
  score: number;
}

/** Lower case, punctuation dropped, whitespace collapsed: how `exact` and `contains` compare. */
export function normalizeText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\p{P}\p{S}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

const ANSWER_MARKER = /(?:final answer|answer)\s*(?:is)?\s*[:：]?\s*|####\s*/i;

/** The output's first non-empty line, after an "Answer:" / "The answer is" label when it starts with one. */
function firstAnswerLine(output: string): string {
  const line = output.split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
  return line.trim().replace(/^(?:the\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:：]\s*/i, '').replace(/^(?:the\s+)?answer\s+is\s+/i, '');
}

const NUMBER = /[-+]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?%?|[-+]?\.\d+/gi;

/** The number after an answer label ("Answer:", "####", "the answer is") if there is one, else the first number. */
function extractNumber(output: string): string {
  const marker = ANSWER_MARKER.exec(output);
  const after = marker ? output.slice(marker.index + marker[0].length) : '';
  const candidates = [...(after.match(NUMBER) ?? []), ...(output.match(NUMBER) ?? [])];
  return candidates[0] ?? '';
}

function numbersEqual(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

/** A letter answer: "B", "(B)", "B)", "B.", "Answer: B", or the text of one of the choices. */
function extractChoice(item: BenchmarkItem, output: string): string {
  const count = item.choices?.length ?? 26;
  const valid = (letter: string) => letter.charCodeAt(0) - 65 < count;
  const text = output.trim();
  const labelled = /(?:answer|option|choice)\s*(?:is)?\s*[:：]?\s*\(?([A-Za-z])(?![A-Za-z])/i.exec(text)?.[1];
  const leading = /^\(?([A-Z])(?:[).:]|$)/.exec(text)?.[1];
  const bracketed = /\(([A-Z])\)/.exec(text)?.[1];
  for (const letter of [labelled?.toUpperCase() === labelled ? labelled : undefined, leading, bracketed]) {
    if (letter && valid(letter)) return letter;
  }
  if (item.choices) {
    const normalized = normalizeText(firstAnswerLine(text));
    const index = item.choices.findIndex((choice) => normalizeText(choice) === normalized);
    if (index >= 0) return choiceLetter(index);
  }
  return '';
}

/**
 * Scores `output` with the item's scorer:
 * - `exact`: the first non-empty line (an "Answer:" label dropped) equals the answer after
 *   {@link normalizeText};
 * - `numeric`: the number after an answer label, else the first number, equals the answer's;
 * - `choice`: the letter read from the output is the answer's letter;
 * - `contains`: the normalized output contains the normalized answer as whole words;
 * - `regex`: the answer, as a case-insensitive regular expression, matches the output.
 */
export function scoreAnswer(item: BenchmarkItem, output: string): ScoredAnswer {
  switch (scorerOf(item)) {
    case 'exact': {
      const extracted = firstAnswerLine(output);
      return { extracted, score: normalizeText(extracted) === normalizeText(item.answer) ? 1 : 0 };
    }
    case 'numeric': {
      const extracted = extractNumber(output);
      const got = parseNumber(extracted);
      const want = parseNumber(item.answer);
      return { extracted, score: got !== null && want !== null && numbersEqual(got, want) ? 1 : 0 };
    }
    case 'choice': {
      const extracted = extractChoice(item, output);
      return { extracted, score: extracted !== '' && extracted === item.answer.trim().toUpperCase() ? 1 : 0 };
    }
    case 'contains': {
      const want = normalizeText(item.answer);
      const got = normalizeText(output);
      const found = want !== '' && ` ${got} `.includes(` ${want} `);
      return { extracted: found ? want : firstAnswerLine(output), score: found ? 1 : 0 };
    }
    case 'regex': {
      const match = new RegExp(item.answer, 'i').exec(output);
      return { extracted: match ? match[0] : '', score: match ? 1 : 0 };
    }
  }
}
