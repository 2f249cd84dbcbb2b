// Trainings: quoting, launching (simulated or on a real trainer), completing a simulated one, cancelling.
import { roundCredits, type TrainingEstimateWire } from '@verdict/contract/contract';
import type pg from 'pg';
import { DEFAULT_LORA_HYPERPARAMETERS } from '../engines/trainer.js';
import type { SandboxContext, TrainingEngine } from './context.js';
import { memorizationProbability } from './simulator.js';
import { getDataset, type DatasetRow } from './store/datasets.js';
import { withTransaction } from './store/db.js';
import { insertFineTunedModel, type ModelRow } from './store/models.js';
import { modelById, requireModel } from './models.js';
import { chargeAccount } from './store/settings.js';
import { getTraining, insertTraining, trainingProgress, trainingToWire, updateTraining, type TrainingRow } from './store/trainings.js';
import { enqueueEvent } from './events.js';
import { requireCredits, withIdempotency } from './idempotency.js';
import { queueDelayMs, quoteTraining, trainingDurationMs, trainingQuote, trainingRate } from './pricing.js';
import { alreadyFinished, notFound, type Reply, SandboxApiError, unprocessable } from './replies.js';

/** The clear refusal when this platform cannot train `model` for real. */
async function requireTrainingEngine(ctx: SandboxContext, model: ModelRow): Promise<TrainingEngine> {
  const engine = ctx.training;
  const unavailable = (message: string) => new SandboxApiError(422, 'engine_unavailable', message);
  if (!engine) throw unavailable(`model ${model.id} is served by ${model.engine}; this platform has no trainer configured`);
  const available = await engine.trainer.availability();
  // A cluster that does not answer now may later: 503, nothing charged, the launch can be retried.
  if (!available.ok && available.kind === 'unreachable') throw new SandboxApiError(503, 'unavailable', available.reason);
  if (!available.ok && available.kind === 'settings') throw unavailable(available.reason);
  if (!available.ok) {
    const install = 'training needs PyTorch: install it with `apt-get install -y python3-torch` (or pip install torch)';
    throw unavailable(`${install}. ${available.reason}`);
  }
  const baseId = model.kind === 'base' ? model.id : model.base_model_id!;
  if (engine.trainer.needsBaseModelFile !== false) {
    const file = engine.baseModelPath(baseId);
    if (file === null) throw unavailable(`training ${model.id} needs the GGUF file of ${baseId} in MODELS_DIR; it is not on this machine`);
    // A model the trainer cannot build or read (its architecture, a tensor type) is refused here, before any charge.
    const refusal = engine.trainer.checkBaseModel ? await engine.trainer.checkBaseModel(file) : null;
    if (refusal !== null) throw unavailable(`${model.id} cannot be trained here: ${refusal}`);
  }
  return engine;
}

/** Price and duration of a real training: trained tokens x the configured rate, at the machine's expected speed. */
export function quoteEngineTraining(
  engine: TrainingEngine,
  dataset: DatasetRow,
  model: ModelRow,
  epochs: number,
): TrainingEstimateWire {
  const trainedTokens = dataset.token_count * epochs;
  return trainingQuote(dataset, model, epochs, {
    rate: engine.creditsPer1kTokens ?? trainingRate(model.params),
    minimumCredits: 0.01,
    durationSeconds: Math.round((trainedTokens / Math.max(1, engine.tokensPerSecond)) * 100) / 100,
  });
}

async function trainingInputs(
  ctx: SandboxContext,
  db: pg.PoolClient | pg.Pool,
  input: { datasetId: string; baseModelId: string; epochs: number },
): Promise<{ dataset: DatasetRow; model: ModelRow; quote: TrainingEstimateWire; engine?: TrainingEngine }> {
  const dataset = await getDataset(db, input.datasetId);
  if (!dataset) throw notFound(`dataset ${input.datasetId}`);
  const model = await requireModel(ctx, db, input.baseModelId);
  if (model.engine === null) {
    if (dataset.examples !== null) {
      throw unprocessable(`dataset ${dataset.id} comes from a real run; model ${model.id} is simulated`);
    }
    return { dataset, model, quote: quoteTraining(dataset, model, input.epochs, ctx.timeScale) };
  }
  const engine = await requireTrainingEngine(ctx, model);
  if (dataset.examples === null) {
    throw unprocessable(`dataset ${dataset.id} comes from a simulated run; model ${model.id} is trained for real`);
  }
  const quote = quoteEngineTraining(engine, dataset, model, input.epochs);
  if (engine.trainer.estimate) {
    // A hosted engine's own price (Together's estimate-price) is the one shown, guarded and charged.
    const own = await engine.trainer
      .estimate({
        examples: dataset.examples,
        baseModelId: model.kind === 'base' ? model.id : model.base_model_id!,
        hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, ...engine.hyperparameters, epochs: input.epochs },
      })
      .catch((error: unknown) => {
        throw new SandboxApiError(422, 'engine_unavailable', error instanceof Error ? error.message : String(error));
      });
    quote.price_credits = own.priceCredits;
    if (own.trainedTokens !== undefined) quote.trained_tokens = own.trainedTokens;
    quote.credits_per_1k_tokens = quote.trained_tokens > 0 ? roundCredits((own.priceCredits / quote.trained_tokens) * 1000) : 0;
  }
  return { dataset, model, quote, engine };
}

export async function estimateTraining(
  ctx: SandboxContext,
  input: { datasetId: string; baseModelId: string; epochs: number },
): Promise<Reply> {
  const { quote } = await trainingInputs(ctx, ctx.pool, input);
  return { status: 200, body: quote };
}

export function launchTraining(
  ctx: SandboxContext,
  input: { datasetId: string; baseModelId: string; epochs: number },
  key: string,
): Promise<Reply> {
  return withIdempotency(ctx, 'trainings', key, input, async (client) => {
    const { dataset, model, quote, engine } = await trainingInputs(ctx, client, input);
    await requireCredits(client, quote.price_credits);
    const now = ctx.now();
    if (engine) {
      const durationMs = quote.estimated_duration_seconds * 1000;
      const row = await insertTraining(client, {
        dataset_id: dataset.id,
        base_model_id: model.id,
        epochs: input.epochs,
        trained_tokens: quote.trained_tokens,
        price: quote.price_credits,
        memorization: 0,
        forgetting: 0,
        generalization: 0,
        will_fail: false,
        created_at: now,
        starts_at: now,
        finishes_at: new Date(now.getTime() + durationMs),
        duration_ms: durationMs,
        trainer: engine.trainer.label,
        hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, ...engine.hyperparameters, epochs: input.epochs },
      });
      ctx.logger.info({ trainingId: row.id, datasetId: dataset.id, trainer: engine.trainer.label }, 'training launched');
      return { status: 201, body: trainingToWire(row, ctx.publicUrl, now) };
    }
    const willFail = ctx.random() < ctx.faults.trainingFailureRate;
    const durationMs = trainingDurationMs(quote.trained_tokens, ctx.timeScale);
    const startsAt = new Date(now.getTime() + queueDelayMs(ctx.timeScale));
    const row = await insertTraining(client, {
      dataset_id: dataset.id,
      base_model_id: model.id,
      epochs: input.epochs,
      trained_tokens: quote.trained_tokens,
      price: quote.price_credits,
      memorization: memorizationProbability(dataset.augmentation),
      forgetting: ctx.simulation.forgettingRate,
      generalization: ctx.simulation.generalizationRate,
      will_fail: willFail,
      created_at: now,
      starts_at: startsAt,
      finishes_at: new Date(startsAt.getTime() + (willFail ? durationMs / 2 : durationMs)),
      duration_ms: durationMs,
    });
    ctx.logger.info({ trainingId: row.id, datasetId: dataset.id, price: quote.price_credits }, 'sandbox training launched');
    return { status: 201, body: trainingToWire(row, ctx.publicUrl, now) };
  });
}

export function fineTunedName(baseName: string, trainingId: string): string {
  const root = baseName.replace(/(-lora-\d+)+$/, '');
  return `${root}-lora-${trainingId.replace(/^tj_/, '')}`;
}

export async function advanceTraining(ctx: SandboxContext, id: string, now: Date): Promise<void> {
  await withTransaction(ctx.pool, async (client) => {
    const training = await getTraining(client, id, 'skip-locked');
    if (!training || (training.status !== 'queued' && training.status !== 'running')) return;
    if (training.status === 'queued' && training.starts_at <= now) {
      await updateTraining(client, id, { status: 'running', started_at: training.starts_at });
      training.status = 'running';
    }
    if (training.status !== 'running' || training.finishes_at > now) return;
    if (training.will_fail) {
      await updateTraining(client, id, {
        status: 'failed',
        charged: 0,
        finished_at: training.finishes_at,
        error_message: 'training diverged: loss became NaN (sandbox-injected failure); nothing was charged',
      });
      await enqueueEvent(ctx, client, 'training.failed', id, training.finishes_at);
      ctx.logger.info({ trainingId: id }, 'sandbox training failed');
      return;
    }
    const base = (await modelById(ctx, training.base_model_id, client))!;
    const name = fineTunedName(base.name, id);
    const modelId = `ft/${name}`;
    await insertFineTunedModel(client, {
      id: modelId,
      name,
      params: base.params,
      sizeLabel: base.size_label,
      baseModelId: base.id,
      trainingJobId: id,
      datasetId: training.dataset_id,
      createdAt: training.finishes_at,
    });
    await updateTraining(client, id, {
      status: 'completed',
      charged: training.price,
      produced_model_id: modelId,
      finished_at: training.finishes_at,
    });
    await chargeAccount(client, training.price);
    await enqueueEvent(ctx, client, 'training.completed', id, training.finishes_at);
    ctx.logger.info({ trainingId: id, modelId, charged: training.price }, 'sandbox training completed');
  });
}


/**
 * What a training has cost when it is cancelled at `now`: its estimate times the progress it had
 * made (a real trainer's last reported step over its total, a simulated training's elapsed share
 * of its duration), rounded to the cent; never more than the estimate.
 */
function cancelledTrainingCharge(training: TrainingRow, now: Date): number {
  const progress = trainingProgress({ ...training, status: 'running', finished_at: now }, now);
  return Math.min(training.price, roundCredits(training.price * progress));
}

/**
 * `POST /trainings/{id}/cancel`: a queued or running training becomes `cancelled` in one
 * transaction with its charge, the release of its reservation and the `training.cancelled` event;
 * its trainer job is cancelled through the trainer port by whichever process supervises it, and no
 * supervisor starts it again. Same answers as {@link cancelRun} otherwise.
 */
export async function cancelTraining(ctx: SandboxContext, id: string): Promise<Reply> {
  const { row, cancelled } = await withTransaction(ctx.pool, async (client) => {
    const training = await getTraining(client, id, 'for-update');
    if (!training) throw notFound(`training ${id}`);
    if (training.status === 'cancelled') return { row: training, cancelled: false };
    if (training.status !== 'queued' && training.status !== 'running') throw alreadyFinished('training', training);
    const now = ctx.now();
    const started = training.started_at ?? (training.trainer === null && training.starts_at <= now ? training.starts_at : null);
    const charged = cancelledTrainingCharge({ ...training, started_at: started }, now);
    await updateTraining(client, id, { status: 'cancelled', charged, started_at: started, finished_at: now });
    await chargeAccount(client, charged);
    await enqueueEvent(ctx, client, 'training.cancelled', id, now);
    ctx.logger.info({ trainingId: id, charged, trainer: training.trainer ?? 'simulator' }, 'training cancelled');
    return { row: (await getTraining(client, id))!, cancelled: true };
  });
  if (cancelled && row.trainer !== null) ctx.training?.supervisor.cancel(row.id);
  return { status: 200, body: trainingToWire(row, ctx.publicUrl, ctx.now()) };
}
