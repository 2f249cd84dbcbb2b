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

/**
 * The number after an answer label ("Answer:", "####", "the answer is") if there is one, else the
 * last number: a worked answer ends on its result ("16 - 3 - 4 = 9 eggs, at $2 each: $18"), as
 * lm-evaluation-harness's flexible extract for GSM8K reads it.
 */
function extractNumber(output: string): string {
  const marker = ANSWER_MARKER.exec(output);
  const labelled = marker ? output.slice(marker.index + marker[0].length).match(NUMBER)?.[0] : undefined;
  return labelled ?? output.match(NUMBER)?.at(-1) ?? '';
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

/** Every accepted answer of an item, the expected one first. */
export function acceptedAnswers(item: BenchmarkItem): string[] {
  return item.answers && item.answers.length > 0 ? item.answers : [item.answer];
}

/** The output cut at the first of `stop` (lm-evaluation-harness's `until`); the output itself without any. */
export function cutAtStop(output: string, stop: readonly string[] | undefined): string {
  if (!stop || stop.length === 0) return output;
  let end = output.length;
  for (const sequence of stop) {
    const at = sequence === '' ? -1 : output.indexOf(sequence);
    if (at >= 0 && at < end) end = at;
  }
  return output.slice(0, end);
}

/** Punctuation after which a line goes on with something else: not the apostrophe or hyphen that continue a word. */
const BREAK = /[\p{P}\p{S}]/u;
const JOINERS = new Set(["'", '\u2019', '-', '\u2010', '\u2011', '_']);

/**
 * The `exact` rule on one line: the line is the answer, or starts with it and goes on after a
 * punctuation mark ("Lily. She loved..." and "Lily, who..." for "Lily"); a longer phrase that only
 * starts with it ("Lily and Tom", "Lily's") is not the answer. Compared after {@link normalizeText}.
 */
export function exactMatch(line: string, answer: string): boolean {
  const want = normalizeText(answer);
  if (want === '') return false;
  if (normalizeText(line) === want) return true;
  const chars = [...line];
  let prefix = '';
  for (const char of chars) {
    if (BREAK.test(char) && !JOINERS.has(char) && prefix.trim() !== '' && normalizeText(prefix) === want) return true;
    prefix += char;
  }
  return false;
}

/**
 * Scores `output` with the item's scorer, against each of its accepted answers (right if any is),
 * after cutting the output at the item's first `stop` sequence:
 * - `exact`: the first non-empty line (an "Answer:" label dropped) is the answer, or starts with it
 *   and goes on after a punctuation mark (see {@link exactMatch});
 * - `numeric`: the number after an answer label ("Answer:", "####"), else the last number, equals
 *   the answer's; "$" and "," ignored;
 * - `choice`: the letter read from the output is the answer's letter;
 * - `contains`: the normalized output contains the normalized answer as whole words;
 * - `regex`: the answer, as a case-insensitive regular expression, matches the output.
 */
export function scoreAnswer(item: BenchmarkItem, fullOutput: string): ScoredAnswer {
  const output = cutAtStop(fullOutput, item.stop);
  const answers = acceptedAnswers(item);
  switch (scorerOf(item)) {
    case 'exact': {
      const extracted = firstAnswerLine(output);
      return { extracted, score: answers.some((answer) => exactMatch(extracted, answer)) ? 1 : 0 };
    }
    case 'numeric': {
      const extracted = extractNumber(output);
      const got = parseNumber(extracted);
      const right = got !== null && answers.some((answer) => {
        const want = parseNumber(answer);
        return want !== null && numbersEqual(got, want);
      });
      return { extracted, score: right ? 1 : 0 };
    }
    case 'choice': {
      const extracted = extractChoice(item, output);
      return { extracted, score: extracted !== '' && answers.some((answer) => extracted === answer.trim().toUpperCase()) ? 1 : 0 };
    }
    case 'contains': {
      const got = ` ${normalizeText(output)} `;
      const found = answers.map(normalizeText).find((want) => want !== '' && got.includes(` ${want} `));
      return { extracted: found ?? firstAnswerLine(output), score: found !== undefined ? 1 : 0 };
    }
    case 'regex': {
      for (const answer of answers) {
        const match = new RegExp(answer, 'i').exec(output);
        if (match) return { extracted: match[0], score: 1 };
      }
      return { extracted: '', score: 0 };
    }
  }
}
