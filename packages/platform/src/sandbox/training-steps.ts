// The durable steps of one real training: its advisory lock, its trainer spec (the dataset written to its work folder), and its outcome written once (failed, or completed with its fine-tuned model, charge and event).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { AdapterRegistration } from '../engines/lora-adapters.js';
import { DEFAULT_LORA_HYPERPARAMETERS, type TrainingSpec } from '../engines/trainer.js';
import type { SandboxContext } from './context.js';
import { enqueueEvent } from './events.js';
import { getDataset } from './store/datasets.js';
import { withTransaction } from './store/db.js';
import { insertFineTunedModel } from './store/models.js';
import { modelById } from './models.js';
import { chargeAccount } from './store/settings.js';
import { getTraining, updateTraining, type TrainingRow } from './store/trainings.js';
import { fineTunedName } from './trainings.js';

/** Where a training's files go, and the machine's base models and threads (the supervisor's options satisfy it). */
export interface TrainingFolders {
  adaptersDir: string;
  workDir: string;
  threads: number;
  baseModelPath(modelId: string): string | null;
}

const LOCK_SQL = `hashtext('verdict-bot:training'), hashtext($1)`;

export function adapterFile(options: Pick<TrainingFolders, 'adaptersDir'>, trainingId: string): string {
  return path.join(options.adaptersDir, `${trainingId}.gguf`);
}

export async function claimTraining(ctx: SandboxContext, id: string): Promise<pg.PoolClient | null> {
  const client = await ctx.pool.connect();
  try {
    const locked = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${LOCK_SQL}) AS ok`, [id]);
    if (locked.rows[0]!.ok) return client;
  } catch (error) {
    client.release(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
  client.release();
  return null;
}

export async function unlockTraining(client: pg.PoolClient, id: string, broken: boolean): Promise<void> {
  if (broken) {
    client.release(new Error('connection lost while training'));
    return;
  }
  try {
    await client.query(`SELECT pg_advisory_unlock(${LOCK_SQL})`, [id]);
    client.release();
  } catch (error) {
    client.release(error instanceof Error ? error : new Error(String(error)));
  }
}

export async function failTraining(ctx: SandboxContext, id: string, message: string): Promise<void> {
  await withTransaction(ctx.pool, async (client) => {
    const training = await getTraining(client, id, 'for-update');
    if (!training || (training.status !== 'queued' && training.status !== 'running')) return;
    const now = ctx.now();
    await updateTraining(client, id, { status: 'failed', charged: 0, finished_at: now, error_message: message });
    await enqueueEvent(ctx, client, 'training.failed', id, now);
  });
  ctx.logger.info({ trainingId: id, message }, 'training failed');
}

/** `servedModel`: the name a hosted trainer's endpoint serves the model under (no adapter file to load). */
export async function completeTraining(
  ctx: SandboxContext,
  registerAdapter: (adapter: AdapterRegistration) => Promise<void>,
  training: TrainingRow, adapterPath: string, finalLoss: number | null, servedModel?: string): Promise<void> {
  const base = await modelById(ctx, training.base_model_id);
  if (!base) throw new Error(`base model ${training.base_model_id} of training ${training.id} is missing`);
  const name = fineTunedName(base.name, training.id);
  const modelId = `ft/${name}`;
  // Served before it exists: no run can name the model before the endpoint has its adapter.
  if (!servedModel) await registerAdapter({ name: modelId, path: adapterPath, baseModelId: base.id });
  const completed = await withTransaction(ctx.pool, async (client) => {
    const current = await getTraining(client, training.id, 'for-update');
    if (!current || (current.status !== 'queued' && current.status !== 'running')) return false;
    const now = ctx.now();
    await insertFineTunedModel(client, {
      id: modelId,
      name,
      params: base.params,
      sizeLabel: base.size_label,
      baseModelId: base.id,
      trainingJobId: training.id,
      datasetId: training.dataset_id,
      createdAt: now,
      adapterPath: servedModel ? null : adapterPath,
      servedModel: servedModel ?? null,
      engine: base.engine ?? null,
    });
    await updateTraining(client, training.id, {
      status: 'completed',
      charged: training.price,
      produced_model_id: modelId,
      adapter_path: servedModel ? null : adapterPath,
      finished_at: now,
      progress_at: now,
      step: current.total_steps ?? current.step,
      ...(finalLoss !== null ? { loss: finalLoss } : {}),
    });
    await chargeAccount(client, training.price);
    await enqueueEvent(ctx, client, 'training.completed', training.id, now);
    return true;
  });
  if (completed) ctx.logger.info({ trainingId: training.id, modelId, adapterPath, charged: training.price }, 'training completed');
}

/**
 * The trainer's spec of a training, its dataset written to its work folder: the same spec on every
 * start, so a remote trainer finds the job an earlier start launched. `needsBaseModel`: a missing
 * GGUF file of the base model is an error (else the path is empty).
 */
export async function prepareTrainingSpec(ctx: SandboxContext, options: TrainingFolders, training: TrainingRow, needsBaseModel: boolean): Promise<{ ok: true; spec: TrainingSpec } | { ok: false; message: string }> {
  const id = training.id;
  const baseModelPath = options.baseModelPath(training.base_model_id);
  if (baseModelPath === null && needsBaseModel) {
    return { ok: false, message: `the GGUF file of base model ${training.base_model_id} is not on this machine; training needs it` };
  }
  const dataset = await getDataset(ctx.pool, training.dataset_id);
  if (!dataset?.examples || dataset.examples.length === 0) return { ok: false, message: `dataset ${training.dataset_id} has no training examples` };
  const workDir = path.join(options.workDir, id);
  await mkdir(workDir, { recursive: true });
  await mkdir(options.adaptersDir, { recursive: true });
  const datasetPath = path.join(workDir, 'dataset.jsonl');
  await writeFile(datasetPath, dataset.examples.map((e) => JSON.stringify({ prompt: e.prompt, completion: e.completion, ...(e.style ? { style: e.style } : {}) })).join('\n') + '\n');
  return {
    ok: true,
    spec: {
      jobId: id,
      baseModelPath: baseModelPath ?? '',
      baseModelId: training.base_model_id,
      datasetPath,
      adapterPath: adapterFile(options, id),
      workDir,
      hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, ...training.hyperparameters, epochs: training.epochs },
      threads: options.threads,
    },
  };
}
