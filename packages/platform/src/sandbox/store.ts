// Sandbox state in Postgres: row types, queries, and the mapping from rows to the wire contract.
import type pg from 'pg';
import {
  isFinishedStatus,
  type AccountWire,
  type DatasetWire,
  type ModelWire,
  type RunStatus,
  type RunWire,
  type TrainingJobWire,
} from '@verdict/contract/contract';
import type { LoraHyperparameters, TrainingExample } from '../engines/trainer.js';
import { BASE_MODELS } from './catalogue.js';
import type { ModelLineage } from './simulator.js';

export type Db = pg.Pool | pg.PoolClient;

/** Runs `fn` in a transaction on one pooled connection. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    // A connection that cannot even roll back is dropped, not returned to the pool.
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    client.release(broken);
  }
}

// ---------------------------------------------------------------- settings and account

export async function getSetting(db: Db, key: string): Promise<string | null> {
  const result = await db.query<{ value: string }>('SELECT value FROM sandbox.settings WHERE key = $1', [key]);
  return result.rows[0]?.value ?? null;
}

export async function setSetting(db: Db, key: string, value: string): Promise<void> {
  await db.query(
    'INSERT INTO sandbox.settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
    [key, value],
  );
}

/** The stored value of `key`, storing `initial` first if there is none. */
export async function ensureSetting(db: Db, key: string, initial: string): Promise<string> {
  await db.query('INSERT INTO sandbox.settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, initial]);
  return (await getSetting(db, key))!;
}

export async function deleteSetting(db: Db, key: string): Promise<void> {
  await db.query('DELETE FROM sandbox.settings WHERE key = $1', [key]);
}

export async function ensureAccount(db: Db, startingBalance: number): Promise<void> {
  await db.query(
    `INSERT INTO sandbox.account (id, name, balance) VALUES (1, 'sandbox', $1) ON CONFLICT (id) DO NOTHING`,
    [startingBalance.toFixed(2)],
  );
}

const RESERVED_SQL = `
  (SELECT COALESCE(SUM(price), 0) FROM sandbox.runs WHERE status IN ('queued', 'running'))
  + (SELECT COALESCE(SUM(price), 0) FROM sandbox.trainings WHERE status IN ('queued', 'running'))`;

/** Balance, reserved (price of in-flight work) and available credits, summed as numeric in SQL. */
export async function readAccount(db: Db, lock = false): Promise<AccountWire> {
  const result = await db.query<{ name: string; balance: number; reserved: number; available: number }>(
    `SELECT name, balance::float8 AS balance, (${RESERVED_SQL})::float8 AS reserved,
            (balance - (${RESERVED_SQL}))::float8 AS available
       FROM sandbox.account WHERE id = 1 ${lock ? 'FOR UPDATE' : ''}`,
  );
  const row = result.rows[0]!;
  return {
    name: row.name,
    balance_credits: row.balance,
    reserved_credits: row.reserved,
    available_credits: row.available,
    environment: 'sandbox',
  };
}

export async function chargeAccount(db: Db, credits: number): Promise<void> {
  await db.query('UPDATE sandbox.account SET balance = balance - $1::numeric WHERE id = 1', [credits.toFixed(2)]);
}

// ---------------------------------------------------------------- models

export interface ModelRow {
  id: string;
  name: string;
  kind: 'base' | 'fine_tuned';
  params: number;
  size_label: string;
  ability: number | null;
  base_model_id: string | null;
  training_job_id: string | null;
  dataset_id: string | null;
  created_at: Date;
  /** The GGUF LoRA adapter a fine-tuned model of a real trainer serves; null otherwise. */
  adapter_path: string | null;
  /** Label of the real inference engine serving it; null = simulated. */
  engine: string | null;
}

const MODEL_COLUMNS = `id, name, kind, params::float8 AS params, size_label, ability, base_model_id, training_job_id,
  dataset_id, created_at, adapter_path, engine`;

export async function upsertBaseModels(db: Db): Promise<void> {
  for (const model of BASE_MODELS) {
    await db.query(
      `INSERT INTO sandbox.models (id, name, kind, params, size_label, ability, created_at)
       VALUES ($1, $2, 'base', $3, $4, $5, '2024-09-19T00:00:00Z')
       ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, params = EXCLUDED.params,
         size_label = EXCLUDED.size_label, ability = EXCLUDED.ability`,
      [model.id, model.name, model.params, model.sizeLabel, model.ability],
    );
  }
}

export async function listModels(db: Db): Promise<ModelRow[]> {
  const result = await db.query<ModelRow>(`SELECT ${MODEL_COLUMNS} FROM sandbox.models ORDER BY created_at, id`);
  return result.rows;
}

export async function getModel(db: Db, id: string): Promise<ModelRow | null> {
  const result = await db.query<ModelRow>(`SELECT ${MODEL_COLUMNS} FROM sandbox.models WHERE id = $1`, [id]);
  return result.rows[0] ?? null;
}

export async function insertFineTunedModel(
  db: Db,
  model: {
    id: string;
    name: string;
    params: number;
    sizeLabel: string;
    baseModelId: string;
    trainingJobId: string;
    datasetId: string;
    createdAt: Date;
    adapterPath?: string | null;
    engine?: string | null;
    /** The name the inference endpoint serves it under when not its id (a hosted fine-tune's output model). */
    servedModel?: string | null;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO sandbox.models (id, name, kind, params, size_label, base_model_id, training_job_id, dataset_id, created_at,
                                 adapter_path, engine, served_model)
     VALUES ($1, $2, 'fine_tuned', $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING`,
    [
      model.id,
      model.name,
      model.params,
      model.sizeLabel,
      model.baseModelId,
      model.trainingJobId,
      model.datasetId,
      model.createdAt,
      model.adapterPath ?? null,
      model.engine ?? null,
      model.servedModel ?? null,
    ],
  );
}

export function modelToWire(row: ModelRow): ModelWire {
  const common = {
    id: row.id,
    name: row.name,
    params: row.params,
    size_label: row.size_label,
    created_at: row.created_at.toISOString(),
    environment: 'sandbox' as const,
  };
  if (row.kind === 'base') {
    return { ...common, kind: 'base', base_model_id: null, training_job_id: null, dataset_id: null };
  }
  return {
    ...common,
    kind: 'fine_tuned',
    base_model_id: row.base_model_id!,
    training_job_id: row.training_job_id!,
    dataset_id: row.dataset_id!,
  };
}

/** Lineages never change once a model exists, so they are cached per sandbox. */
export async function loadLineage(db: Db, modelId: string, cache: Map<string, ModelLineage>): Promise<ModelLineage> {
  const cached = cache.get(modelId);
  if (cached) return cached;
  const model = await getModel(db, modelId);
  if (!model) throw new Error(`model ${modelId} is missing from the sandbox store`);
  let lineage: ModelLineage;
  if (model.kind === 'base') {
    lineage = { kind: 'base', id: model.id, ability: model.ability ?? 0 };
  } else {
    const result = await db.query<{
      memorization: number;
      forgetting: number;
      generalization: number;
      trained_question_ids: string[];
    }>(
      `SELECT t.memorization, t.forgetting, t.generalization, d.trained_question_ids
         FROM sandbox.trainings t JOIN sandbox.datasets d ON d.id = t.dataset_id
        WHERE t.id = $1`,
      [model.training_job_id],
    );
    const training = result.rows[0];
    if (!training) throw new Error(`training ${model.training_job_id} of model ${modelId} is missing`);
    lineage = {
      kind: 'fine_tuned',
      id: model.id,
      parent: await loadLineage(db, model.base_model_id!, cache),
      trainedQuestionIds: new Set(training.trained_question_ids),
      memorization: training.memorization,
      forgetting: training.forgetting,
      generalization: training.generalization,
    };
  }
  cache.set(modelId, lineage);
  return lineage;
}

// ---------------------------------------------------------------- runs

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

function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
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

// ---------------------------------------------------------------- datasets

export interface DatasetRow {
  id: string;
  run_id: string;
  benchmark_id: string;
  source_model_id: string;
  augmentation: number;
  held_out_fraction: number;
  seed: number;
  failed_question_count: number;
  trained_question_ids: string[];
  held_out_question_ids: string[];
  example_count: number;
  token_count: number;
  created_at: Date;
  /** The examples a real trainer trains on (null for a simulated run's dataset). */
  examples: TrainingExample[] | null;
}

const DATASET_COLUMNS = `id, run_id, benchmark_id, source_model_id, augmentation, held_out_fraction,
  seed::float8 AS seed, failed_question_count, trained_question_ids, held_out_question_ids, example_count,
  token_count::float8 AS token_count, created_at, examples`;

export async function insertDataset(
  db: Db,
  dataset: Omit<DatasetRow, 'id' | 'examples'> & { examples?: TrainingExample[] | null },
): Promise<DatasetRow> {
  const result = await db.query<DatasetRow>(
    `INSERT INTO sandbox.datasets (id, run_id, benchmark_id, source_model_id, augmentation, held_out_fraction, seed,
        failed_question_count, trained_question_ids, held_out_question_ids, example_count, token_count, created_at,
        examples)
     VALUES ('ds_' || nextval('sandbox.dataset_ids'), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     RETURNING ${DATASET_COLUMNS}`,
    [
      dataset.run_id,
      dataset.benchmark_id,
      dataset.source_model_id,
      dataset.augmentation,
      dataset.held_out_fraction,
      dataset.seed,
      dataset.failed_question_count,
      dataset.trained_question_ids,
      dataset.held_out_question_ids,
      dataset.example_count,
      dataset.token_count,
      dataset.created_at,
      dataset.examples ? JSON.stringify(dataset.examples) : null,
    ],
  );
  return result.rows[0]!;
}

export async function getDataset(db: Db, id: string): Promise<DatasetRow | null> {
  const result = await db.query<DatasetRow>(`SELECT ${DATASET_COLUMNS} FROM sandbox.datasets WHERE id = $1`, [id]);
  return result.rows[0] ?? null;
}

export function datasetToWire(row: DatasetRow): DatasetWire {
  return {
    id: row.id,
    status: 'ready',
    run_id: row.run_id,
    benchmark_id: row.benchmark_id,
    source_model_id: row.source_model_id,
    augmentation: row.augmentation,
    held_out_fraction: row.held_out_fraction,
    seed: row.seed,
    failed_question_count: row.failed_question_count,
    trained_question_ids: row.trained_question_ids,
    held_out_question_ids: row.held_out_question_ids,
    example_count: row.example_count,
    token_count: row.token_count,
    created_at: row.created_at.toISOString(),
    environment: 'sandbox',
  };
}

// ---------------------------------------------------------------- trainings

export interface TrainingRow {
  id: string;
  dataset_id: string;
  base_model_id: string;
  epochs: number;
  status: RunStatus;
  trained_tokens: number;
  price: number;
  charged: number | null;
  produced_model_id: string | null;
  memorization: number;
  forgetting: number;
  generalization: number;
  will_fail: boolean;
  created_at: Date;
  starts_at: Date;
  finishes_at: Date;
  duration_ms: number;
  started_at: Date | null;
  finished_at: Date | null;
  error_message: string | null;
  /** Label of the real trainer doing this training; null = simulated. */
  trainer: string | null;
  hyperparameters: LoraHyperparameters | null;
  /** Times a trainer job was started for it (a rerun after a crash counts again). */
  attempts: number;
  step: number | null;
  total_steps: number | null;
  loss: number | null;
  progress_at: Date | null;
  estimated_finish_at: Date | null;
  adapter_path: string | null;
  /** When the engine's job of a cancelled training was known to be no longer running; null = not (yet) known. */
  engine_stopped_at: Date | null;
}

const TRAINING_COLUMNS = `id, dataset_id, base_model_id, epochs, status, trained_tokens::float8 AS trained_tokens,
  price::float8 AS price, charged::float8 AS charged, produced_model_id, memorization, forgetting, generalization,
  will_fail, created_at, starts_at, finishes_at, duration_ms, started_at, finished_at, error_message, trainer,
  hyperparameters, attempts, step, total_steps, loss, progress_at, estimated_finish_at, adapter_path, engine_stopped_at`;

export async function insertTraining(
  db: Db,
  training: Pick<
    TrainingRow,
    | 'dataset_id'
    | 'base_model_id'
    | 'epochs'
    | 'trained_tokens'
    | 'price'
    | 'memorization'
    | 'forgetting'
    | 'generalization'
    | 'will_fail'
    | 'created_at'
    | 'starts_at'
    | 'finishes_at'
    | 'duration_ms'
  > &
    Partial<Pick<TrainingRow, 'trainer' | 'hyperparameters'>>,
): Promise<TrainingRow> {
  const result = await db.query<TrainingRow>(
    `INSERT INTO sandbox.trainings (id, dataset_id, base_model_id, epochs, status, trained_tokens, price, memorization,
        forgetting, generalization, will_fail, created_at, starts_at, finishes_at, duration_ms, trainer, hyperparameters)
     VALUES ('tj_' || nextval('sandbox.training_ids'), $1, $2, $3, 'queued', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
             $14, $15)
     RETURNING ${TRAINING_COLUMNS}`,
    [
      training.dataset_id,
      training.base_model_id,
      training.epochs,
      training.trained_tokens,
      training.price.toFixed(2),
      training.memorization,
      training.forgetting,
      training.generalization,
      training.will_fail,
      training.created_at,
      training.starts_at,
      training.finishes_at,
      training.duration_ms,
      training.trainer ?? null,
      training.hyperparameters ? JSON.stringify(training.hyperparameters) : null,
    ],
  );
  return result.rows[0]!;
}

export async function getTraining(
  db: Db,
  id: string,
  lock: 'none' | 'skip-locked' | 'for-update' = 'none',
): Promise<TrainingRow | null> {
  const suffix = lock === 'skip-locked' ? 'FOR UPDATE SKIP LOCKED' : lock === 'for-update' ? 'FOR UPDATE' : '';
  const result = await db.query<TrainingRow>(
    `SELECT ${TRAINING_COLUMNS} FROM sandbox.trainings WHERE id = $1 ${suffix}`,
    [id],
  );
  return result.rows[0] ?? null;
}

export async function updateTraining(db: Db, id: string, fields: Partial<Omit<TrainingRow, 'id'>>): Promise<void> {
  await updateTrainingWhere(db, id, fields, '');
}

/** Updates a training only while it is queued or running; false when it has finished (e.g. was cancelled). */
export async function updateActiveTraining(db: Db, id: string, fields: Partial<Omit<TrainingRow, 'id'>>): Promise<boolean> {
  return updateTrainingWhere(db, id, fields, ` AND status IN ('queued', 'running')`);
}

async function updateTrainingWhere(db: Db, id: string, fields: Partial<Omit<TrainingRow, 'id'>>, condition: string): Promise<boolean> {
  const entries = Object.entries(fields);
  if (entries.length === 0) return false;
  const sets = entries.map(([key], i) => `${key} = $${i + 2}`);
  const values = entries.map(([key, value]) => (key === 'hyperparameters' && value !== null ? JSON.stringify(value) : value));
  const result = await db.query(`UPDATE sandbox.trainings SET ${sets.join(', ')} WHERE id = $1${condition}`, [id, ...values]);
  return (result.rowCount ?? 0) > 0;
}

/** Simulated trainings that are due to start or finish (real ones are the training supervisor's). */
export async function dueTrainingIds(db: Db, now: Date): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `SELECT id FROM sandbox.trainings
      WHERE trainer IS NULL
        AND ((status = 'queued' AND starts_at <= $1) OR (status = 'running' AND finishes_at <= $1))
      ORDER BY seq LIMIT 100`,
    [now],
  );
  return result.rows.map((r) => r.id);
}

/** Real trainings not finished yet, oldest first: what a training supervisor claims. */
export async function activeTrainerTrainingIds(db: Db): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `SELECT id FROM sandbox.trainings WHERE trainer IS NOT NULL AND status IN ('queued', 'running') ORDER BY seq LIMIT 100`,
  );
  return result.rows.map((r) => r.id);
}

/**
 * Real trainings cancelled after a trainer start whose engine job nobody has known to be stopped
 * yet, oldest first: a remote job of one may still run at the engine.
 */
export async function unstoppedCancelledTrainingIds(db: Db, limit = 20): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `SELECT id FROM sandbox.trainings
      WHERE status = 'cancelled' AND trainer IS NOT NULL AND attempts > 0 AND engine_stopped_at IS NULL
      ORDER BY seq LIMIT $1`,
    [limit],
  );
  return result.rows.map((r) => r.id);
}

/** Records that a training's engine job is no longer running; false when that was already recorded. */
export async function recordEngineStopped(db: Db, id: string, at: Date): Promise<boolean> {
  const result = await db.query('UPDATE sandbox.trainings SET engine_stopped_at = $2 WHERE id = $1 AND engine_stopped_at IS NULL', [id, at]);
  return (result.rowCount ?? 0) > 0;
}

export function trainingWebUrl(publicUrl: string, id: string): string {
  return `${publicUrl}/trainings/${encodeURIComponent(id)}`;
}

/**
 * 1 once completed. A real training reports the trainer's steps done over total steps; a simulated
 * one elapsed over planned duration (a cancelled one up to its cancel).
 */
export function trainingProgress(row: TrainingRow, now: Date): number {
  if (row.status === 'completed') return 1;
  if (row.trainer !== null) {
    if (row.step === null || !row.total_steps) return 0;
    return Math.round(Math.min(0.99, Math.max(0, row.step / row.total_steps)) * 100) / 100;
  }
  if (row.started_at === null) return 0;
  const end = row.finished_at ?? now;
  const ratio = (end.getTime() - row.started_at.getTime()) / Math.max(1, row.duration_ms);
  return Math.round(Math.min(row.status === 'failed' ? 1 : 0.99, Math.max(0, ratio)) * 100) / 100;
}

export function trainingToWire(row: TrainingRow, publicUrl: string, now: Date): TrainingJobWire {
  const finished = isFinishedStatus(row.status);
  return {
    id: row.id,
    dataset_id: row.dataset_id,
    base_model_id: row.base_model_id,
    epochs: row.epochs,
    status: row.status,
    progress: trainingProgress(row, now),
    trained_tokens: row.trained_tokens,
    price_estimated_credits: row.price,
    price_charged_credits: row.charged,
    produced_model_id: row.produced_model_id,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    estimated_finish_at: finished
      ? null
      : (row.estimated_finish_at ?? new Date(row.starts_at.getTime() + row.duration_ms)).toISOString(),
    error_message: row.error_message,
    web_url: trainingWebUrl(publicUrl, row.id),
    environment: 'sandbox',
    engine: row.trainer ?? 'simulator',
    steps: row.trainer !== null && row.total_steps !== null ? { done: row.step ?? 0, total: row.total_steps } : null,
    loss: row.loss,
  };
}

// ---------------------------------------------------------------- webhook outbox

export interface OutboxInsert {
  id: string;
  type: string;
  resourceId: string;
  body: string;
  status: 'pending' | 'dropped';
  copies: number;
  held: boolean;
  nextAttemptAt: Date;
  createdAt: Date;
}

export async function insertOutboxEvent(db: Db, event: OutboxInsert): Promise<void> {
  await db.query(
    `INSERT INTO sandbox.webhook_outbox (id, type, resource_id, body, status, copies, held, next_attempt_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [event.id, event.type, event.resourceId, event.body, event.status, event.copies, event.held, event.nextAttemptAt, event.createdAt],
  );
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
