// Sandbox runs in Postgres: row type, queries, the wire form, and a real run's answered questions for datasets.
import { isFinishedStatus, type RunStatus, type RunWire } from '@verdict/contract/contract';
import { type Db, iso } from './db.js';

export interface RunRow {
  id: string;
  benchmark_id: string;
  model_id: string;
  status: RunStatus;
  question_count: number;
  price: number;
  charged: number | null;
  score: number | null;
  category_scores: Array<{ category: string; score: number; question_count: number }> | null;
  seed: number;
  flip_rate: number;
  will_fail: boolean;
  created_at: Date;
  starts_at: Date;
  finishes_at: Date;
  duration_ms: number;
  started_at: Date | null;
  finished_at: Date | null;
  error_message: string | null;
  /** Label of the inference engine asking the questions; null = simulated. */
  engine: string | null;
  credits_per_1k_tokens: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  /** Questions whose answer is stored (real engines; 0 for simulated runs). */
  answered: number;
  /** When the last answer was stored. */
  answered_at: Date | null;
  /** Stored answers cut by the token budget (real engines). */
  truncated: number;
  /** Error answers: questions that could not be answered or stored (real engines). */
  errors: number;
}

const RUN_COLUMNS = `id, benchmark_id, model_id, status, question_count, price::float8 AS price,
  charged::float8 AS charged, score, category_scores, seed::float8 AS seed, flip_rate, will_fail, created_at,
  starts_at, finishes_at, duration_ms, started_at, finished_at, error_message, engine,
  credits_per_1k_tokens::float8 AS credits_per_1k_tokens, prompt_tokens::float8 AS prompt_tokens,
  completion_tokens::float8 AS completion_tokens,
  (SELECT count(*)::int FROM sandbox.run_answers a WHERE a.run_id = runs.id AND a.answered_at IS NOT NULL) AS answered,
  (SELECT max(a.answered_at) FROM sandbox.run_answers a WHERE a.run_id = runs.id) AS answered_at,
  (SELECT count(*)::int FROM sandbox.run_answers a WHERE a.run_id = runs.id AND a.finish_reason = 'length') AS truncated,
  (SELECT count(*)::int FROM sandbox.run_answers a WHERE a.run_id = runs.id AND a.error IS NOT NULL) AS errors`;

export async function insertRun(
  db: Db,
  run: {
    benchmarkId: string;
    modelId: string;
    questionCount: number;
    price: number;
    seed: number;
    flipRate: number;
    willFail: boolean;
    createdAt: Date;
    startsAt: Date;
    finishesAt: Date;
    durationMs: number;
    engine?: string | null;
    creditsPer1kTokens?: number | null;
  },
): Promise<RunRow> {
  const result = await db.query<RunRow>(
    `INSERT INTO sandbox.runs (id, benchmark_id, model_id, status, question_count, price, seed, flip_rate, will_fail,
                               created_at, starts_at, finishes_at, duration_ms, engine, credits_per_1k_tokens)
     VALUES ('run_' || nextval('sandbox.run_ids'), $1, $2, 'queued', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     RETURNING ${RUN_COLUMNS}`,
    [
      run.benchmarkId,
      run.modelId,
      run.questionCount,
      run.price.toFixed(2),
      run.seed,
      run.flipRate,
      run.willFail,
      run.createdAt,
      run.startsAt,
      run.finishesAt,
      run.durationMs,
      run.engine ?? null,
      run.creditsPer1kTokens ?? null,
    ],
  );
  return result.rows[0]!;
}

export async function getRun(
  db: Db,
  id: string,
  lock: 'none' | 'skip-locked' | 'for-update' = 'none',
): Promise<RunRow | null> {
  const suffix = lock === 'skip-locked' ? 'FOR UPDATE SKIP LOCKED' : lock === 'for-update' ? 'FOR UPDATE' : '';
  const result = await db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM sandbox.runs WHERE id = $1 ${suffix}`, [id]);
  return result.rows[0] ?? null;
}

export async function updateRun(
  db: Db,
  id: string,
  fields: Partial<Omit<RunRow, 'id' | 'answered' | 'answered_at' | 'truncated' | 'errors'>>,
): Promise<void> {
  const entries = Object.entries(fields);
  if (entries.length === 0) return;
  const sets = entries.map(([key], i) => `${key} = $${i + 2}`);
  const values = entries.map(([key, value]) =>
    key === 'category_scores' && value !== null ? JSON.stringify(value) : value,
  );
  await db.query(`UPDATE sandbox.runs SET ${sets.join(', ')} WHERE id = $1`, [id, ...values]);
}

export async function dueRunIds(db: Db, now: Date): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `SELECT id FROM sandbox.runs
      WHERE engine IS NULL
        AND ((status = 'queued' AND starts_at <= $1) OR (status = 'running' AND finishes_at <= $1))
      ORDER BY seq LIMIT 100`,
    [now],
  );
  return result.rows.map((r) => r.id);
}

export function runWebUrl(publicUrl: string, id: string): string {
  return `${publicUrl}/runs/${encodeURIComponent(id)}`;
}

/**
 * When a run on a real engine should finish: its pace so far (elapsed since start over answered
 * questions) times the questions left, from now. Null until the first answer is stored.
 */
function engineRunEta(row: RunRow, now: Date): Date | null {
  if (row.started_at === null || row.answered === 0) return null;
  const perQuestion = (Math.max(now.getTime(), row.answered_at?.getTime() ?? 0) - row.started_at.getTime()) / row.answered;
  return new Date(now.getTime() + perQuestion * (row.question_count - row.answered));
}

/** The engine label on the wire: the engine's own, or `simulator` for the sandbox's simulated model. */
export const SIMULATED_ENGINE = 'simulator';

/**
 * Questions a simulated run has answered by `at`: its share of the planned duration since its
 * planned start, in whole questions (all once completed). A cancelled run stopped at `finished_at`.
 */
export function simulatedRunDone(row: RunRow, at: Date): number {
  if (row.status === 'completed') return row.question_count;
  const end = row.status === 'cancelled' || row.status === 'failed' ? (row.finished_at ?? at) : at;
  if (row.status === 'queued' && row.starts_at > at) return 0;
  const fraction = (end.getTime() - row.starts_at.getTime()) / Math.max(1, row.duration_ms);
  return Math.floor(row.question_count * Math.min(1, Math.max(0, fraction)));
}

export function runToWire(row: RunRow, publicUrl: string, now: Date = new Date()): RunWire {
  const finished = isFinishedStatus(row.status);
  const simulatedEta = new Date(row.starts_at.getTime() + row.duration_ms);
  const eta = row.engine === null ? simulatedEta : engineRunEta(row, now);
  return {
    id: row.id,
    benchmark_id: row.benchmark_id,
    model_id: row.model_id,
    status: row.status,
    question_count: row.question_count,
    score: row.score,
    category_scores: row.category_scores,
    price_credits: row.price,
    charged_credits: row.charged,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    estimated_finish_at: finished || eta === null ? null : eta.toISOString(),
    error_message: row.error_message,
    web_url: runWebUrl(publicUrl, row.id),
    environment: 'sandbox',
    engine: row.engine ?? SIMULATED_ENGINE,
    progress: {
      done: row.engine === null ? simulatedRunDone(row, now) : row.answered,
      total: row.question_count,
    },
    ...(row.engine === null
      ? {}
      : {
          prompt_tokens: row.prompt_tokens ?? null,
          completion_tokens: row.completion_tokens ?? null,
          truncated_count: row.truncated,
          error_count: row.errors,
        }),
  };
}

// ---------------------------------------------------------------- real runs, for datasets

export interface AnsweredQuestionRow {
  question_id: string;
  item: unknown;
  score: number | null;
  /** Set for an error answer (not a failure of the model). */
  error: string | null;
  /** How the question was asked (`chat` or `completion`), once answered. */
  style: string | null;
}

/** A real run's questions in benchmark order with their benchmark item, score and the form they were asked in. */
export async function runAnsweredQuestions(db: Db, runId: string): Promise<AnsweredQuestionRow[]> {
  const result = await db.query<AnsweredQuestionRow>(
    'SELECT question_id, item, score, error, style FROM sandbox.run_answers WHERE run_id = $1 ORDER BY position',
    [runId],
  );
  return result.rows;
}
