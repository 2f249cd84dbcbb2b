// Sandbox trainings in Postgres: row type, queries (due, active, cancelled but not stopped), progress and the wire form.
import { isFinishedStatus, type RunStatus, type TrainingJobWire } from '@verdict/contract/contract';
import type { LoraHyperparameters } from '../../engines/trainer.js';
import { type Db, iso } from './db.js';

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
