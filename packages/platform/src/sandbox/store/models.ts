// Sandbox models in Postgres: base and fine-tuned rows, their wire form, and a model's training lineage.
import type { ModelWire } from '@verdict/contract/contract';
import { BASE_MODELS } from '../catalogue.js';
import type { ModelLineage } from '../simulator.js';
import type { Db } from './db.js';

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
