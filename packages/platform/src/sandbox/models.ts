// The model catalogue: the inference engine's models recorded as base models, and search over them.
import type { InferenceModel } from '../engines/inference.js';
import { upsertEngineModels } from './answers.js';
import type { InferenceContext, SandboxContext } from './context.js';
import { getModel, type ModelRow } from './store/models.js';
import type { Db } from './store/db.js';
import { notFound, SandboxApiError } from './replies.js';

/**
 * Models the inference endpoint serves, recorded as this platform's base models (at most one
 * lookup a second); an endpoint that cannot be reached is a 503 naming it.
 */
export async function syncEngineModels(ctx: SandboxContext, inference: InferenceContext): Promise<InferenceModel[]> {
  const last = engineModelsSynced.get(inference);
  if (last && Date.now() - last.at < 1_000) return last.models;
  let models: InferenceModel[];
  try {
    models = await inference.engine.listModels();
  } catch (error) {
    throw new SandboxApiError(503, 'unavailable', `the inference engine (${inference.engine.label}) cannot list its models: ${(error as Error).message}`);
  }
  await upsertEngineModels(ctx.pool, models, inference.engine.label, ctx.now());
  ctx.models.clear();
  engineModelsSynced.set(inference, { at: Date.now(), models });
  return models;
}
const engineModelsSynced = new WeakMap<InferenceContext, { at: number; models: InferenceModel[] }>();

/** Most model rows the context keeps; past it, the cache starts again empty. */
const MODELS_CACHED = 10_000;

/**
 * A model by id: read once, then from the context (every launch, dataset and training looks its
 * model up, some several times). Only rows read outside a transaction are kept, so a row a
 * transaction inserts and then rolls back is never served.
 */
export async function modelById(ctx: SandboxContext, id: string, db: Db = ctx.pool): Promise<ModelRow | null> {
  const cached = ctx.models.get(id);
  if (cached) return cached;
  const row = await getModel(db, id);
  if (row && db === ctx.pool) {
    if (ctx.models.size >= MODELS_CACHED) ctx.models.clear();
    ctx.models.set(id, row);
  }
  return row;
}

/** A model by id (see {@link modelById}), or the API's 404. */
export async function requireModel(ctx: SandboxContext, db: Db, id: string): Promise<ModelRow> {
  const model = await modelById(ctx, id, db);
  if (!model) throw notFound(`model ${id}`);
  return model;
}

const compact = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * Models matching `query` case-insensitively, best first: exact id, exact name, prefix, substring,
 * then substring ignoring punctuation (`qwen2.5 0.5b` finds `Qwen2.5-0.5B-Instruct`). Base models
 * rank before fine-tunes of equal match. An empty query lists everything.
 */
export function searchModels(models: readonly ModelRow[], query: string, limit = 50): ModelRow[] {
  const q = query.trim().toLowerCase();
  const qc = compact(q);
  const rank = (m: ModelRow): number | null => {
    if (q === '') return 4;
    const id = m.id.toLowerCase();
    const name = m.name.toLowerCase();
    if (id === q) return 0;
    if (name === q) return 1;
    if (name.startsWith(q) || id.startsWith(q)) return 2;
    if (name.includes(q) || id.includes(q)) return 3;
    if (qc !== '' && (compact(name).includes(qc) || compact(id).includes(qc))) return 4;
    return null;
  };
  return models
    .map((model) => ({ model, rank: rank(model) }))
    .filter((entry): entry is { model: ModelRow; rank: number } => entry.rank !== null)
    .sort(
      (a, b) =>
        a.rank - b.rank ||
        Number(a.model.kind !== 'base') - Number(b.model.kind !== 'base') ||
        a.model.name.localeCompare(b.model.name),
    )
    .slice(0, limit)
    .map((entry) => entry.model);
}
