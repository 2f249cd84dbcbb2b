// Sandbox datasets in Postgres: row type, queries and the wire form.
import type { DatasetWire } from '@verdict/contract/contract';
import type { TrainingExample } from '../../engines/trainer.js';
import type { Db } from './db.js';

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
