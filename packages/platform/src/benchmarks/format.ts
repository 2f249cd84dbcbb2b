// The benchmark file format: one JSON object a line, validated whole, every bad line and field named.

export const SCORERS = ['exact', 'numeric', 'choice', 'contains', 'regex'] as const;
export type Scorer = (typeof SCORERS)[number];

/** One question of a benchmark file. `scorer` defaults to `choice` when `choices` is given, else `exact`. */
export interface BenchmarkItem {
  id: string;
  question: string;
  answer: string;
  category?: string;
  choices?: string[];
  scorer?: Scorer;
  max_tokens?: number;
}

/** A problem in a benchmark file; `line` is 1-based, 0 for the file as a whole. */
export interface BenchmarkFileError {
  line: number;
  field?: string;
  message: string;
}

export type ParseBenchmarkResult = { ok: true; items: BenchmarkItem[] } | { ok: false; errors: BenchmarkFileError[] };

export const BENCHMARK_LIMITS = {
  maxItems: 100_000,
  maxIdLength: 200,
  maxChoices: 26,
  maxTokens: 4096,
  /** Errors listed before the rest are summarized in one line. */
  maxErrors: 100,
} as const;

const FIELDS = ['id', 'question', 'answer', 'category', 'choices', 'scorer', 'max_tokens'] as const;

/** A benchmark id as a file name or URL segment carries it. */
export const BENCHMARK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export function choiceLetter(index: number): string {
  return String.fromCharCode(65 + index);
}

/** Scorer an item is scored with. */
export function scorerOf(item: BenchmarkItem): Scorer {
  return item.scorer ?? (item.choices ? 'choice' : 'exact');
}

/** Parses a number the way the `numeric` scorer reads one: thousands separators, a sign, a decimal or exponent. */
export function parseNumber(text: string): number | null {
  const cleaned = text.trim().replace(/^\$/, '').replace(/%$/, '').replace(/,(?=\d{3}(\D|$))/g, '');
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(cleaned)) return null;
  const value = Number(cleaned);
  return Number.isFinite(value) ? value : null;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}

/** Validates one parsed line; pushes its problems and returns the item when there are none. */
function validateItem(value: unknown, line: number, errors: BenchmarkFileError[]): BenchmarkItem | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push({ line, message: `expected a JSON object with id, question and answer, got ${describe(value)}` });
    return null;
  }
  const record = value as Record<string, unknown>;
  const before = errors.length;
  const fail = (field: string, message: string) => errors.push({ line, field, message });

  for (const key of Object.keys(record)) {
    if (!(FIELDS as readonly string[]).includes(key)) fail(key, `unknown field (allowed: ${FIELDS.join(', ')})`);
  }
  const text = (field: 'id' | 'question' | 'answer', numbersToo: boolean): string | null => {
    const raw = record[field];
    if (raw === undefined) return fail(field, 'is required'), null;
    if (numbersToo && typeof raw === 'number' && Number.isFinite(raw)) return String(raw);
    if (typeof raw !== 'string') return fail(field, `must be a string${numbersToo ? ' or a number' : ''}, got ${describe(raw)}`), null;
    if (raw.trim() === '') return fail(field, 'must not be empty'), null;
    return raw;
  };
  const id = text('id', true);
  if (id !== null && id.length > BENCHMARK_LIMITS.maxIdLength) fail('id', `is longer than ${BENCHMARK_LIMITS.maxIdLength} characters`);
  const question = text('question', false);
  const answer = text('answer', true);

  let category: string | undefined;
  if (record.category !== undefined && record.category !== null) {
    if (typeof record.category !== 'string' || record.category.trim() === '') fail('category', `must be a non-empty string, got ${describe(record.category)}`);
    else category = record.category.trim();
  }

  let choices: string[] | undefined;
  if (record.choices !== undefined && record.choices !== null) {
    const raw = record.choices;
    if (!Array.isArray(raw)) fail('choices', `must be an array of strings, got ${describe(raw)}`);
    else if (raw.length < 2 || raw.length > BENCHMARK_LIMITS.maxChoices) fail('choices', `must have 2 to ${BENCHMARK_LIMITS.maxChoices} entries, has ${raw.length}`);
    else {
      const bad = raw.findIndex((c) => typeof c !== 'string' || c.trim() === '');
      if (bad >= 0) fail(`choices[${bad}]`, `must be a non-empty string, got ${describe(raw[bad])}`);
      else choices = raw as string[];
    }
  }

  let scorer: Scorer | undefined;
  if (record.scorer !== undefined && record.scorer !== null) {
    if (typeof record.scorer !== 'string' || !(SCORERS as readonly string[]).includes(record.scorer)) {
      fail('scorer', `unknown scorer ${JSON.stringify(record.scorer)} (one of: ${SCORERS.join(', ')})`);
    } else scorer = record.scorer as Scorer;
  }

  let maxTokens: number | undefined;
  if (record.max_tokens !== undefined && record.max_tokens !== null) {
    const raw = record.max_tokens;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > BENCHMARK_LIMITS.maxTokens) {
      fail('max_tokens', `must be an integer from 1 to ${BENCHMARK_LIMITS.maxTokens}, got ${describe(raw)}`);
    } else maxTokens = raw;
  }

  if (answer !== null) {
    const effective = scorer ?? (choices || record.choices ? 'choice' : 'exact');
    if (effective === 'choice') {
      const letter = answer.trim().toUpperCase();
      const count = choices?.length ?? 26;
      if (!/^[A-Z]$/.test(letter)) fail('answer', `the choice scorer needs a letter (A, B, ...), got ${JSON.stringify(answer)}`);
      else if (letter.charCodeAt(0) - 65 >= count) fail('answer', `letter ${letter} is past the ${count} choices (A to ${choiceLetter(count - 1)})`);
    } else if (effective === 'numeric' && parseNumber(answer) === null) {
      fail('answer', `the numeric scorer needs a number, got ${JSON.stringify(answer)}`);
    } else if (effective === 'regex') {
      try {
        new RegExp(answer, 'i');
      } catch (err) {
        fail('answer', `not a valid regular expression: ${(err as Error).message}`);
      }
    }
  }

  if (errors.length > before || id === null || question === null || answer === null) return null;
  const item: BenchmarkItem = { id, question, answer };
  if (category !== undefined) item.category = category;
  if (choices !== undefined) item.choices = choices;
  if (scorer !== undefined) item.scorer = scorer;
  if (maxTokens !== undefined) item.max_tokens = maxTokens;
  if (item.scorer === 'choice' || (item.scorer === undefined && item.choices)) item.answer = item.answer.trim().toUpperCase();
  return item;
}

/**
 * Parses a benchmark file. The file is accepted whole or refused whole: on any problem the result
 * lists every bad line (1-based) with the field and what is wrong, up to
 * {@link BENCHMARK_LIMITS.maxErrors} and then a count of the rest. Blank lines are skipped.
 */
export function parseBenchmarkJsonl(text: string, benchmarkId: string): ParseBenchmarkResult {
  const errors: BenchmarkFileError[] = [];
  if (!BENCHMARK_ID_PATTERN.test(benchmarkId)) {
    errors.push({ line: 0, field: 'benchmark id', message: `${JSON.stringify(benchmarkId)} is not a valid benchmark id (letters, digits, '.', '_', '-'; at most 100; starting with a letter or digit)` });
  }
  const items: BenchmarkItem[] = [];
  const firstLine = new Map<string, number>();
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  let nonBlank = 0;
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    nonBlank += 1;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      errors.push({ line, message: `not valid JSON: ${(err as Error).message}` });
      return;
    }
    const item = validateItem(value, line, errors);
    const id = item?.id ?? (typeof (value as { id?: unknown })?.id === 'string' || typeof (value as { id?: unknown })?.id === 'number' ? String((value as { id: unknown }).id) : null);
    if (id !== null) {
      const seen = firstLine.get(id);
      if (seen !== undefined) errors.push({ line, field: 'id', message: `duplicate id ${JSON.stringify(id)} (first on line ${seen})` });
      else firstLine.set(id, line);
    }
    if (item) items.push(item);
  });
  if (nonBlank === 0) errors.push({ line: 0, message: 'the file has no questions (expected one JSON object a line)' });
  if (nonBlank > BENCHMARK_LIMITS.maxItems) errors.push({ line: 0, message: `the file has ${nonBlank} questions; at most ${BENCHMARK_LIMITS.maxItems} are accepted` });
  if (errors.length === 0) return { ok: true, items };
  errors.sort((a, b) => a.line - b.line);
  if (errors.length > BENCHMARK_LIMITS.maxErrors) {
    const rest = errors.length - BENCHMARK_LIMITS.maxErrors;
    const next = errors[BENCHMARK_LIMITS.maxErrors]!.line;
    return { ok: false, errors: [...errors.slice(0, BENCHMARK_LIMITS.maxErrors), { line: next, message: `and ${rest} more problems from this line on` }] };
  }
  return { ok: false, errors };
}

/** One line per error, e.g. `line 3, field answer: is required`. */
export function formatBenchmarkErrors(errors: readonly BenchmarkFileError[]): string {
  return errors
    .map((e) => `${e.line === 0 ? 'file' : `line ${e.line}`}${e.field ? `, field ${e.field}` : ''}: ${e.message}`)
    .join('\n');
}
