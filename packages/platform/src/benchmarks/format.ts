// The benchmark file format: one JSON object a line, validated whole, every bad line and field named; files in other formats are read into it.
import { unstorableText } from '../safe-text.js';
import { convertLine, detectFormat, formatReport, type BenchmarkFormatReport } from './formats.js';

export const SCORERS = ['exact', 'numeric', 'choice', 'contains', 'regex'] as const;
export type Scorer = (typeof SCORERS)[number];

/**
 * One question of a benchmark file. `scorer` defaults to `choice` when `choices` is given, else
 * `exact`. `answer` is the expected answer (what a training set teaches); `answers`, when the file
 * gave a list, holds every accepted answer, `answer` first. `stop`: the output is cut at the first
 * of these before it is scored (and the engine is asked to stop there).
 */
export interface BenchmarkItem {
  id: string;
  question: string;
  answer: string;
  answers?: string[];
  category?: string;
  choices?: string[];
  scorer?: Scorer;
  max_tokens?: number;
  stop?: string[];
}

/** A problem in a benchmark file; `line` is 1-based, 0 for the file as a whole. */
export interface BenchmarkFileError {
  line: number;
  field?: string;
  message: string;
}

export type ParseBenchmarkResult =
  | { ok: true; items: BenchmarkItem[]; format: BenchmarkFormatReport }
  | { ok: false; errors: BenchmarkFileError[]; format?: BenchmarkFormatReport };

export const BENCHMARK_LIMITS = {
  maxItems: 100_000,
  maxIdLength: 200,
  maxChoices: 26,
  maxTokens: 4096,
  maxAnswers: 100,
  maxStops: 8,
  maxStopLength: 100,
  /** Errors listed before the rest are summarized in one line. */
  maxErrors: 100,
} as const;

const FIELDS = ['id', 'question', 'answer', 'category', 'choices', 'scorer', 'max_tokens', 'stop'] as const;
/** Fields of the optional first line `{"defaults": {...}}`: applied to every question that does not set its own. */
const DEFAULT_FIELDS = ['category', 'scorer', 'max_tokens', 'stop'] as const;

/** A benchmark id as a file name or URL segment carries it. */
export const BENCHMARK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export function choiceLetter(index: number): string {
  return String.fromCharCode(65 + index);
}

/** Scorer an item is scored with. */
export function scorerOf(item: BenchmarkItem): Scorer {
  return item.scorer ?? (item.choices ? 'choice' : 'exact');
}

/**
 * Parses a number the way the `numeric` scorer reads one: a sign, a decimal or exponent; "$" and
 * "," ignored wherever they are (as GSM8K is scored), a trailing "%" or "." dropped.
 */
export function parseNumber(text: string): number | null {
  const cleaned = text.trim().replace(/[$,]/g, '').replace(/[%.]$/, '');
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(cleaned)) return null;
  const value = Number(cleaned);
  return Number.isFinite(value) ? value : null;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}

type Fail = (field: string, message: string) => void;

/** A list of stop sequences (a string is a list of one). */
function readStop(raw: unknown, field: string, fail: Fail): string[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  const list = typeof raw === 'string' ? [raw] : raw;
  if (!Array.isArray(list) || list.length === 0 || list.length > BENCHMARK_LIMITS.maxStops) {
    fail(field, `must be a string or a list of 1 to ${BENCHMARK_LIMITS.maxStops} strings, got ${describe(raw)}`);
    return undefined;
  }
  const bad = list.findIndex((s) => typeof s !== 'string' || s === '' || s.length > BENCHMARK_LIMITS.maxStopLength || unstorableText(s) !== null);
  if (bad >= 0) {
    fail(`${field}[${bad}]`, `must be a non-empty string of at most ${BENCHMARK_LIMITS.maxStopLength} characters, got ${describe(list[bad])}`);
    return undefined;
  }
  return list as string[];
}

function readScorer(raw: unknown, field: string, fail: Fail): Scorer | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string' || !(SCORERS as readonly string[]).includes(raw)) {
    fail(field, `unknown scorer ${JSON.stringify(raw)} (one of: ${SCORERS.join(', ')})`);
    return undefined;
  }
  return raw as Scorer;
}

function readMaxTokens(raw: unknown, field: string, fail: Fail): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > BENCHMARK_LIMITS.maxTokens) {
    fail(field, `must be an integer from 1 to ${BENCHMARK_LIMITS.maxTokens}, got ${describe(raw)}`);
    return undefined;
  }
  return raw;
}

function readCategory(raw: unknown, field: string, fail: Fail): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string' || raw.trim() === '' || unstorableText(raw) !== null) {
    fail(field, `must be a non-empty string, got ${describe(raw)}`);
    return undefined;
  }
  return raw.trim();
}

/** Settings of the `{"defaults": {...}}` line. */
export interface BenchmarkDefaults {
  category?: string;
  scorer?: Scorer;
  max_tokens?: number;
  stop?: string[];
}

function validateDefaults(value: unknown, line: number, errors: BenchmarkFileError[]): BenchmarkDefaults {
  const fail: Fail = (field, message) => errors.push({ line, field: `defaults.${field}`, message });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push({ line, field: 'defaults', message: `must be an object with any of ${DEFAULT_FIELDS.join(', ')}, got ${describe(value)}` });
    return {};
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!(DEFAULT_FIELDS as readonly string[]).includes(key)) fail(key, `unknown field (allowed: ${DEFAULT_FIELDS.join(', ')})`);
  }
  const defaults: BenchmarkDefaults = {};
  const category = readCategory(record.category, 'category', fail);
  const scorer = readScorer(record.scorer, 'scorer', fail);
  const maxTokens = readMaxTokens(record.max_tokens, 'max_tokens', fail);
  const stop = readStop(record.stop, 'stop', fail);
  if (category !== undefined) defaults.category = category;
  if (scorer !== undefined) defaults.scorer = scorer;
  if (maxTokens !== undefined) defaults.max_tokens = maxTokens;
  if (stop !== undefined) defaults.stop = stop;
  return defaults;
}

/**
 * Validates one record in our fields; pushes its problems and returns the item when there are
 * none. `names` maps our field names to the file's own (a foreign format's), so a problem names
 * the field the person wrote; `strict` refuses unknown fields (our format only).
 */
function validateItem(
  value: unknown,
  line: number,
  errors: BenchmarkFileError[],
  options: { names?: Record<string, string>; strict: boolean; defaults: BenchmarkDefaults },
): BenchmarkItem | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push({ line, message: `expected a JSON object with id, question and answer, got ${describe(value)}` });
    return null;
  }
  const record = value as Record<string, unknown>;
  const before = errors.length;
  const name = (field: string) => {
    const [head, ...rest] = field.split(/(?=\[)/);
    return (options.names?.[head!] ?? head) + rest.join('');
  };
  const fail: Fail = (field, message) => errors.push({ line, field: name(field), message });

  if (options.strict) {
    for (const key of Object.keys(record)) {
      if (!(FIELDS as readonly string[]).includes(key)) fail(key, `unknown field (allowed: ${FIELDS.join(', ')})`);
    }
  }
  const text = (raw: unknown, field: string, numbersToo: boolean): string | null => {
    if (raw === undefined || raw === null) return fail(field, 'is required'), null;
    if (numbersToo && typeof raw === 'number' && Number.isFinite(raw)) return String(raw);
    if (typeof raw !== 'string') return fail(field, `must be a string${numbersToo ? ' or a number' : ''}, got ${describe(raw)}`), null;
    if (raw.trim() === '') return fail(field, 'must not be empty'), null;
    const unstorable = unstorableText(raw);
    if (unstorable) return fail(field, unstorable), null;
    return raw;
  };
  const id = text(record.id, 'id', true);
  if (id !== null && id.length > BENCHMARK_LIMITS.maxIdLength) fail('id', `is longer than ${BENCHMARK_LIMITS.maxIdLength} characters`);
  const question = text(record.question, 'question', false);

  // An answer, or a list of accepted answers (the first is the one a training set teaches).
  let answers: string[] | null = null;
  if (Array.isArray(record.answer)) {
    const list = record.answer;
    if (list.length === 0 || list.length > BENCHMARK_LIMITS.maxAnswers) {
      fail('answer', `a list of accepted answers must have 1 to ${BENCHMARK_LIMITS.maxAnswers} entries, has ${list.length}`);
    } else {
      const read = list.map((entry, index) => text(entry, `answer[${index}]`, true));
      if (read.every((a): a is string => a !== null)) answers = [...new Set(read)];
    }
  } else {
    const single = text(record.answer, 'answer', true);
    if (single !== null) answers = [single];
  }

  const category = readCategory(record.category, 'category', fail) ?? options.defaults.category;

  let choices: string[] | undefined;
  if (record.choices !== undefined && record.choices !== null) {
    const raw = record.choices;
    if (!Array.isArray(raw)) fail('choices', `must be an array of strings, got ${describe(raw)}`);
    else if (raw.length < 2 || raw.length > BENCHMARK_LIMITS.maxChoices) fail('choices', `must have 2 to ${BENCHMARK_LIMITS.maxChoices} entries, has ${raw.length}`);
    else {
      const bad = raw.findIndex((c) => typeof c !== 'string' || c.trim() === '' || unstorableText(c) !== null);
      if (bad >= 0) fail(`choices[${bad}]`, `must be a non-empty string, got ${describe(raw[bad])}`);
      else choices = raw as string[];
    }
  }

  const scorer = readScorer(record.scorer, 'scorer', fail) ?? (choices || record.choices ? undefined : options.defaults.scorer);
  const maxTokens = readMaxTokens(record.max_tokens, 'max_tokens', fail) ?? options.defaults.max_tokens;
  const stop = readStop(record.stop, 'stop', fail) ?? options.defaults.stop;

  if (answers !== null) {
    const effective = scorer ?? (choices || record.choices ? 'choice' : 'exact');
    answers.forEach((answer, index) => {
      const field = answers!.length > 1 || Array.isArray(record.answer) ? `answer[${index}]` : 'answer';
      if (effective === 'choice') {
        const letter = answer.trim().toUpperCase();
        const count = choices?.length ?? 26;
        if (!/^[A-Z]$/.test(letter)) fail(field, `the choice scorer needs a letter (A, B, ...), got ${JSON.stringify(answer)}`);
        else if (letter.charCodeAt(0) - 65 >= count) fail(field, `letter ${letter} is past the ${count} choices (A to ${choiceLetter(count - 1)})`);
      } else if (effective === 'numeric' && parseNumber(answer) === null) {
        fail(field, `the numeric scorer needs a number, got ${JSON.stringify(answer)}`);
      } else if (effective === 'regex') {
        try {
          new RegExp(answer, 'i');
        } catch (err) {
          fail(field, `not a valid regular expression: ${(err as Error).message}`);
        }
      }
    });
  }

  if (errors.length > before || id === null || question === null || answers === null) return null;
  const isChoice = scorer === 'choice' || (scorer === undefined && choices !== undefined);
  const accepted = isChoice ? [...new Set(answers.map((a) => a.trim().toUpperCase()))] : answers;
  const item: BenchmarkItem = { id, question, answer: accepted[0]! };
  if (accepted.length > 1) item.answers = accepted;
  if (category !== undefined) item.category = category;
  if (choices !== undefined) item.choices = choices;
  if (scorer !== undefined) item.scorer = scorer;
  if (maxTokens !== undefined) item.max_tokens = maxTokens;
  if (stop !== undefined) item.stop = stop;
  return item;
}

/**
 * Parses a benchmark file, in our format or one detected from its first question (OpenAI evals,
 * Inspect AI, MMLU, ARC or GSM8K rows; see formats.ts): `format` says which, and how its fields
 * were read. A first line `{"defaults": {...}}` sets `stop`, `max_tokens`, `scorer` or `category`
 * for every question without its own. The file is accepted whole or refused whole: on any problem
 * the result lists every bad line (1-based) with the field (as the file names it) and what is
 * wrong, up to {@link BENCHMARK_LIMITS.maxErrors} and then a count of the rest. Blank lines are skipped.
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
  let questions = 0;
  let defaults: BenchmarkDefaults = {};
  const parsed = lines.map((raw) => {
    if (raw.trim() === '') return { blank: true as const };
    try {
      return { blank: false as const, value: JSON.parse(raw) as unknown };
    } catch (err) {
      return { blank: false as const, error: (err as Error).message };
    }
  });
  const isRecordValue = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  // The file's format: the first of its first questions that only a foreign format has (so one bad first line does not hide it), else ours.
  const sample = parsed.flatMap((p) => ('value' in p && isRecordValue(p.value) && !('defaults' in p.value) ? [p.value] : [])).slice(0, 10);
  const format: BenchmarkFormatReport = formatReport(sample.map(detectFormat).find((id) => id !== 'ours') ?? 'ours');
  parsed.forEach((entry, index) => {
    const line = index + 1;
    if (entry.blank) return;
    nonBlank += 1;
    if (!('value' in entry)) {
      if (nonBlank > 1) questions += 1;
      errors.push({ line, message: `not valid JSON: ${entry.error}` });
      return;
    }
    const value = entry.value;
    const isRecord = isRecordValue(value);
    if (nonBlank === 1 && isRecord && Object.keys(value).length === 1 && 'defaults' in value) {
      defaults = validateDefaults(value.defaults, line, errors);
      return;
    }
    questions += 1;
    let item: BenchmarkItem | null;
    if (format.id === 'ours' || !isRecord) {
      item = validateItem(value, line, errors, { strict: true, defaults });
    } else {
      const problems: Array<{ field?: string; message: string }> = [];
      const converted = convertLine(format.id, value, questions, problems);
      for (const problem of problems) errors.push({ line, ...problem });
      item = converted ? validateItem(converted.record, line, errors, { names: converted.fields, strict: false, defaults }) : null;
    }
    const rawId = isRecord ? value.id : undefined;
    const id = item?.id ?? (typeof rawId === 'string' || typeof rawId === 'number' ? String(rawId) : null);
    if (id !== null) {
      const seen = firstLine.get(id);
      if (seen !== undefined) errors.push({ line, field: 'id', message: `duplicate id ${JSON.stringify(id)} (first on line ${seen})` });
      else firstLine.set(id, line);
    }
    if (item) items.push(item);
  });
  if (questions === 0) errors.push({ line: 0, message: 'the file has no questions (expected one JSON object a line)' });
  if (questions > BENCHMARK_LIMITS.maxItems) errors.push({ line: 0, message: `the file has ${questions} questions; at most ${BENCHMARK_LIMITS.maxItems} are accepted` });
  if (errors.length === 0) return { ok: true, items, format };
  errors.sort((a, b) => a.line - b.line);
  if (errors.length > BENCHMARK_LIMITS.maxErrors) {
    const rest = errors.length - BENCHMARK_LIMITS.maxErrors;
    const next = errors[BENCHMARK_LIMITS.maxErrors]!.line;
    return { ok: false, format, errors: [...errors.slice(0, BENCHMARK_LIMITS.maxErrors), { line: next, message: `and ${rest} more problems from this line on` }] };
  }
  return { ok: false, errors, format };
}

/** One line per error, e.g. `line 3, field answer: is required`. */
export function formatBenchmarkErrors(errors: readonly BenchmarkFileError[]): string {
  return errors
    .map((e) => `${e.line === 0 ? 'file' : `line ${e.line}`}${e.field ? `, field ${e.field}` : ''}: ${e.message}`)
    .join('\n');
}
