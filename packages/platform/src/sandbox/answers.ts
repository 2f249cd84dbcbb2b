// Runs on a real engine in Postgres: the per-question answer rows, their totals, and models an endpoint serves.
import type { BenchmarkItem } from '../benchmarks/index.js';
import type { QuestionResultWire } from '@verdict/contract/contract';
import type { InferenceModel } from '../engines/inference.js';
import { storableText } from '../safe-text.js';
import type { Db } from './store/db.js';

/** A benchmark question as a run stores it. */
export type RunItem = BenchmarkItem;

export interface AnswerRow {
  run_id: string;
  position: number;
  question_id: string;
  category: string;
  question: string;
  expected_answer: string;
  item: RunItem;
  prompt: string;
  max_tokens: number | null;
  style: string | null;
  raw_output: string | null;
  /** The exact output as a JSON string literal when `raw_output` had to escape NUL or lone surrogates. */
  raw_output_exact: string | null;
  extracted_answer: string | null;
  score: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  finish_reason: string | null;
  /** Why this question has an error answer (the component that failed); null for a real answer. */
  error: string | null;
  answered_at: Date | null;
}

/** Category of a question that has none. */
export const DEFAULT_CATEGORY = 'all';

/** Stores every question of a new run, each with the prompt it will be asked, in one statement. */
export async function insertRunQuestions(
  db: Db,
  runId: string,
  questions: ReadonlyArray<{ item: RunItem; prompt: string }>,
): Promise<void> {
  await db.query(
    `INSERT INTO sandbox.run_answers (run_id, position, question_id, category, question, expected_answer, item, prompt)
     SELECT $1, q.ord - 1, q.item->>'id', COALESCE(q.item->>'category', $4), q.item->>'question', q.item->>'answer',
            q.item, p.prompt
       FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS q(item, ord)
       JOIN unnest($3::text[]) WITH ORDINALITY AS p(prompt, ord) ON p.ord = q.ord`,
    [runId, JSON.stringify(questions.map((q) => q.item)), questions.map((q) => q.prompt), DEFAULT_CATEGORY],
  );
}

export interface PendingQuestion {
  runId: string;
  position: number;
  modelId: string;
  item: RunItem;
  prompt: string;
}

/** Unanswered questions of running engine runs, oldest run first, skipping `exclude` (`runId:position`). */
export async function pendingQuestions(db: Db, limit: number, exclude: ReadonlySet<string>): Promise<PendingQuestion[]> {
  const result = await db.query<{ run_id: string; position: number; model_id: string; item: RunItem; prompt: string }>(
    `SELECT a.run_id, a.position, COALESCE(m.served_model, r.model_id) AS model_id, a.item, a.prompt
       FROM sandbox.runs r JOIN sandbox.run_answers a ON a.run_id = r.id AND a.answered_at IS NULL
       LEFT JOIN sandbox.models m ON m.id = r.model_id
      WHERE r.engine IS NOT NULL AND r.status = 'running'
        AND NOT (a.run_id || ':' || a.position = ANY($2::text[]))
      ORDER BY r.seq, a.position LIMIT $1`,
    [limit, [...exclude]],
  );
  return result.rows.map((r) => ({ runId: r.run_id, position: r.position, modelId: r.model_id, item: r.item, prompt: r.prompt }));
}

export interface StoredAnswer {
  maxTokens: number | null;
  style: string | null;
  rawOutput: string | null;
  extractedAnswer: string;
  score: number;
  promptTokens: number;
  completionTokens: number;
  finishReason: string | null;
  /** Set for an error answer: the question could not be answered or stored; it is scored 0. */
  error?: string;
  answeredAt: Date;
}

/** The error answer of a question that could not be answered or stored: scored wrong, no tokens, the reason kept. */
export function errorAnswer(error: string, answeredAt: Date, maxTokens: number | null = null): StoredAnswer {
  return { maxTokens, style: null, rawOutput: null, extractedAnswer: '', score: 0, promptTokens: 0, completionTokens: 0, finishReason: null, error, answeredAt };
}

/**
 * Stores a question's answer once, and only while its run is running; false when it was already
 * stored (the first answer stays) or the run has finished (a cancelled run keeps the answers it had:
 * the share lock makes a concurrent cancel, which locks the run for update, count this answer or refuse it).
 * Any text is stored: NUL characters and lone surrogates are shown escaped, the exact output kept
 * beside it (see {@link storableText}).
 */
export async function storeAnswer(db: Db, runId: string, position: number, answer: StoredAnswer): Promise<boolean> {
  const raw = answer.rawOutput === null ? null : storableText(answer.rawOutput);
  const result = await db.query(
    `UPDATE sandbox.run_answers
        SET max_tokens = $3, style = $4, raw_output = $5, extracted_answer = $6, score = $7, prompt_tokens = $8,
            completion_tokens = $9, finish_reason = $10, answered_at = $11, raw_output_exact = $12, error = $13
      WHERE run_id = $1 AND position = $2 AND answered_at IS NULL
        AND EXISTS (SELECT 1 FROM sandbox.runs r WHERE r.id = $1 AND r.status = 'running' FOR SHARE)`,
    [
      runId,
      position,
      answer.maxTokens,
      answer.style,
      raw?.text ?? null,
      storableText(answer.extractedAnswer).text,
      answer.score,
      answer.promptTokens,
      answer.completionTokens,
      answer.finishReason === null ? null : storableText(answer.finishReason).text,
      answer.answeredAt,
      raw?.exact ?? null,
      answer.error === undefined ? null : storableText(answer.error).text,
    ],
  );
  return (result.rowCount ?? 0) > 0;
}

export interface AnswerTotals {
  total: number;
  answered: number;
  /** Answers cut by the token budget (`finish_reason: length`). */
  truncated: number;
  /** Error answers: questions that could not be answered or stored. */
  errors: number;
  /** The first error answer's reason, when there is one. */
  firstError: string | null;
  scoreSum: number;
  promptTokens: number;
  completionTokens: number;
  categories: Array<{ category: string; score: number; question_count: number }>;
}

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** Totals of a run's stored answers: the run's score and per-category scores come from these. */
export async function answerTotals(db: Db, runId: string): Promise<AnswerTotals> {
  const result = await db.query<{
    category: string;
    total: number;
    answered: number;
    score_sum: number;
    prompt_tokens: number;
    completion_tokens: number;
    truncated: number;
    errors: number;
    first_error: string | null;
    first: number;
  }>(
    `SELECT category, count(*)::int AS total, count(answered_at)::int AS answered,
            count(*) FILTER (WHERE finish_reason = 'length')::int AS truncated, count(error)::int AS errors,
            (array_agg(error ORDER BY position) FILTER (WHERE error IS NOT NULL))[1] AS first_error,
            COALESCE(sum(score), 0)::float8 AS score_sum, COALESCE(sum(prompt_tokens), 0)::float8 AS prompt_tokens,
            COALESCE(sum(completion_tokens), 0)::float8 AS completion_tokens, min(position) AS first
       FROM sandbox.run_answers WHERE run_id = $1 GROUP BY category ORDER BY first`,
    [runId],
  );
  const totals: AnswerTotals = { total: 0, answered: 0, truncated: 0, errors: 0, firstError: null, scoreSum: 0, promptTokens: 0, completionTokens: 0, categories: [] };
  for (const row of result.rows) {
    totals.total += row.total;
    totals.answered += row.answered;
    totals.truncated += row.truncated;
    totals.errors += row.errors;
    totals.firstError ??= row.first_error;
    totals.scoreSum += row.score_sum;
    totals.promptTokens += row.prompt_tokens;
    totals.completionTokens += row.completion_tokens;
    totals.categories.push({ category: row.category, score: round4(row.score_sum / Math.max(1, row.total)), question_count: row.total });
  }
  return totals;
}

/** One page of a run's stored answers, in benchmark order. */
export async function listAnswers(db: Db, runId: string, offset: number, limit: number): Promise<AnswerRow[]> {
  const result = await db.query<AnswerRow>(
    `SELECT * FROM sandbox.run_answers WHERE run_id = $1 ORDER BY position OFFSET $2 LIMIT $3`,
    [runId, offset, limit],
  );
  return result.rows;
}

/** Longest model answer shown per question; the whole output stays stored. */
export const MAX_SHOWN_ANSWER_CHARS = 2_000;

/**
 * A stored answer in the contract's per-question shape; `correct` is set when the scorer gave 0 or
 * 1. A long answer is cut to {@link MAX_SHOWN_ANSWER_CHARS} with a note of its length.
 */
export function answerToWire(row: AnswerRow): QuestionResultWire {
  const score = row.score ?? 0;
  const answer = row.extracted_answer ?? '';
  const shown = answer.length > MAX_SHOWN_ANSWER_CHARS ? `${answer.slice(0, MAX_SHOWN_ANSWER_CHARS).replace(/[\uD800-\uDBFF]$/, '')}… (${answer.length} characters)` : answer;
  return {
    question_id: row.question_id,
    category: row.category,
    question: row.question,
    expected_answer: row.expected_answer,
    model_answer: shown,
    correct: score === 0 || score === 1 ? score === 1 : null,
    score,
    truncated: row.finish_reason === 'length',
    error: row.error,
  };
}

/**
 * Records the models an endpoint serves as base models of this platform (adapters it lists are
 * not: the platform's own trained models are recorded by their training). `engine` marks them as
 * served by a real engine, so model lookup lists them instead of the simulated catalogue.
 */
export async function upsertEngineModels(db: Db, models: readonly InferenceModel[], engine: string, at: Date): Promise<void> {
  const bases = models.filter((m) => m.parent === null);
  if (bases.length === 0) return;
  await db.query(
    `INSERT INTO sandbox.models (id, name, kind, params, size_label, engine, created_at)
     SELECT m.id, m.id, 'base', m.params, m.size_label, $2, $3
       FROM jsonb_to_recordset($1::jsonb) AS m(id text, params bigint, size_label text)
     ON CONFLICT (id) DO UPDATE SET engine = EXCLUDED.engine, params = EXCLUDED.params, size_label = EXCLUDED.size_label
      WHERE sandbox.models.kind = 'base'`,
    [
      JSON.stringify(bases.map((m) => ({ id: m.id, params: m.params ?? 1, size_label: m.params ? sizeLabel(m.params) : 'unknown' }))),
      engine,
      at,
    ],
  );
}

function sizeLabel(params: number): string {
  if (params >= 1e9) return `${Math.round(params / 1e8) / 10}B`;
  if (params >= 1e6) return `${Math.round(params / 1e5) / 10}M`;
  return `${Math.round(params / 100) / 10}K`;
}
