// Builders for paired runs with chosen 2x2 counts, shared by the analysis tests.
import type { QuestionOutcome } from '../../src/analysis/index.js';

export interface Cells {
  bothRight?: number;
  fixed?: number;
  broken?: number;
  bothWrong?: number;
}

export interface Runs {
  before: QuestionOutcome[];
  after: QuestionOutcome[];
}

/** Runs whose joined table has the given cells; ids are `${prefix}0001`... in the order both right, fixed, broken, both wrong. */
export function runsWith(cells: Cells, options: { prefix?: string; category?: string } = {}): Runs {
  const prefix = options.prefix ?? 'q';
  const category = options.category ?? 'general';
  const before: QuestionOutcome[] = [];
  const after: QuestionOutcome[] = [];
  let k = 0;
  const add = (wasRight: boolean, isRight: boolean, count = 0): void => {
    for (let i = 0; i < count; i++) {
      const questionId = `${prefix}${String(++k).padStart(4, '0')}`;
      before.push({ questionId, category, correct: wasRight });
      after.push({ questionId, category, correct: isRight });
    }
  };
  add(true, true, cells.bothRight);
  add(false, true, cells.fixed);
  add(true, false, cells.broken);
  add(false, false, cells.bothWrong);
  return { before, after };
}

/** Concatenates runs built separately (use distinct prefixes). */
export function combine(...parts: Runs[]): Runs {
  return { before: parts.flatMap((p) => p.before), after: parts.flatMap((p) => p.after) };
}

/** Ids of the before-run questions matching `predicate`. */
export function idsWhere(runs: Runs, predicate: (before: QuestionOutcome, after: QuestionOutcome) => boolean): string[] {
  return runs.before.filter((q, i) => predicate(q, runs.after[i]!)).map((q) => q.questionId);
}

/** Every number in a JSON-like value, with its path. */
export function numbersIn(value: unknown, path = '$'): Array<[string, number]> {
  if (typeof value === 'number') return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => numbersIn(v, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => numbersIn(v, `${path}.${k}`));
  }
  return [];
}
