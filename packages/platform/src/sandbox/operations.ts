// Sandbox business logic: launches with idempotency and credit checks, and completing due work with its webhook.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import {
  priceRun,
  roundCredits,
  BenchmarkPricingSchema,
  FAILED_SCORE_THRESHOLD,
  type ApiErrorCode,
  type BenchmarkWire,
  type LaunchRunInput,
  type TrainingEstimateWire,
  type WebhookEventType,
  type WebhookEventWire,
} from '@verdict/contract/contract';
import type { BenchmarkItem } from '../benchmarks/format.js';
import { buildTrainingExamples } from '../engines/training-dataset.js';
import { DEFAULT_LORA_HYPERPARAMETERS } from '../engines/trainer.js';
import { categoryCounts, findBenchmark, questionAt, questionIndex, type BenchmarkDefinition } from './catalogue.js';
import type { InferenceModel, PromptStyle } from '../engines/inference.js';
import { chargeFor, estimateRunCredits, longestAnswer } from '../engines/run-pricing.js';
import { checkAdapterServed } from '../engines/adapter-check.js';
import { estimateTokens, generationBudget } from '../engines/inference.js';
import { answerTotals, insertRunQuestions, upsertEngineModels } from './answers.js';
import type { InferenceContext, SandboxContext, TrainingEngine } from './context.js';
import { memorizationProbability, splitFailures, summarizeRun } from './simulator.js';
import {
  chargeAccount,
  datasetToWire,
  dueRunIds,
  dueTrainingIds,
  getDataset,
  getModel,
  getRun,
  getTraining,
  insertDataset,
  insertFineTunedModel,
  insertOutboxEvent,
  insertRun,
  insertTraining,
  loadLineage,
  readAccount,
  runAnsweredQuestions,
  runToWire,
  simulatedRunDone,
  trainingProgress,
  trainingToWire,
  updateRun,
  updateTraining,
  withTransaction,
  type DatasetRow,
  type ModelRow,
  type RunRow,
  type TrainingRow,
} from './store.js';

export class SandboxApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const notFound = (what: string) => new SandboxApiError(404, 'not_found', `${what} not found`);
const unprocessable = (message: string) => new SandboxApiError(422, 'invalid_request', message);

// ---------------------------------------------------------------- catalogue views

export function benchmarkToWire(benchmark: BenchmarkDefinition): BenchmarkWire {
  return {
    id: benchmark.id,
    name: benchmark.name,
    description: benchmark.description,
    question_count: benchmark.questionCount,
    categories: categoryCounts(benchmark).map((c) => ({ name: c.name, question_count: c.count })),
    scoring: benchmark.scoring,
    pricing: benchmark.pricing,
    environment: 'sandbox',
  };
}

export function requireBenchmark(id: string): BenchmarkDefinition {
  const benchmark = findBenchmark(id);
  if (!benchmark) throw notFound(`benchmark ${id}`);
  return benchmark;
}

async function requireModel(db: pg.PoolClient | pg.Pool, id: string): Promise<ModelRow> {
  const model = await getModel(db, id);
  if (!model) throw notFound(`model ${id}`);
  return model;
}

// ---------------------------------------------------------------- durations and prices

export function runDurationMs(questionCount: number, timeScale: number): number {
  return 60_000 * Math.sqrt(Math.max(1, questionCount / 100)) * timeScale;
}

export function queueDelayMs(timeScale: number): number {
  return 2_000 * timeScale;
}

export function trainingDurationMs(trainedTokens: number, timeScale: number): number {
  return 300_000 * Math.min(4, Math.max(0.5, trainedTokens / 60_000)) * timeScale;
}

/** Training price per 1,000 trained tokens (dataset tokens x epochs), by base model size. */
export function trainingRate(params: number): number {
  if (params <= 1_000_000_000) return 0.2;
  if (params <= 3_500_000_000) return 0.4;
  if (params <= 10_000_000_000) return 1;
  return 2.5;
}

export function quoteTraining(
  dataset: DatasetRow,
  model: ModelRow,
  epochs: number,
  timeScale: number,
): TrainingEstimateWire {
  const trainedTokens = dataset.token_count * epochs;
  return trainingQuote(dataset, model, epochs, {
    rate: trainingRate(model.params),
    minimumCredits: 1,
    durationSeconds: Math.round((queueDelayMs(timeScale) + trainingDurationMs(trainedTokens, timeScale)) / 10) / 100,
  });
}

/** The estimate of a training, simulated or real: trained tokens (dataset tokens x epochs) x a rate per 1,000. */
function trainingQuote(
  dataset: DatasetRow,
  model: ModelRow,
  epochs: number,
  pricing: { rate: number; minimumCredits: number; durationSeconds: number },
): TrainingEstimateWire {
  const trainedTokens = dataset.token_count * epochs;
  return {
    dataset_id: dataset.id,
    base_model_id: model.id,
    epochs,
    trained_tokens: trainedTokens,
    credits_per_1k_tokens: pricing.rate,
    price_credits: Math.max(pricing.minimumCredits, roundCredits((trainedTokens / 1000) * pricing.rate)),
    estimated_duration_seconds: pricing.durationSeconds,
    environment: 'sandbox',
  };
}

// ---------------------------------------------------------------- idempotency and credits

function requestHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/**
 * Runs `create` at most once per (scope, key): a repeated key with the same request replays the
 * stored response with status 200; with a different request it fails 422. A failed `create`
 * rolls back and leaves the key unused. Concurrent requests with one key serialize on its row.
 */
async function withIdempotency(
  ctx: SandboxContext,
  scope: string,
  key: string | undefined,
  request: unknown,
  create: (client: pg.PoolClient) => Promise<Reply>,
): Promise<Reply> {
  if (key === undefined) return withTransaction(ctx.pool, create);
  const hash = requestHash(request);
  return withTransaction(ctx.pool, async (client) => {
    const inserted = await client.query(
      `INSERT INTO sandbox.idempotency_keys (scope, key, request_hash) VALUES ($1, $2, $3)
       ON CONFLICT (scope, key) DO NOTHING RETURNING key`,
      [scope, key, hash],
    );
    if (inserted.rowCount === 0) {
      const existing = await client.query<{ request_hash: string; response: unknown }>(
        'SELECT request_hash, response FROM sandbox.idempotency_keys WHERE scope = $1 AND key = $2',
        [scope, key],
      );
      const row = existing.rows[0]!;
      if (row.request_hash !== hash) {
        throw unprocessable('Idempotency-Key was already used with a different request body');
      }
      return { status: 200, body: row.response, headers: { 'idempotent-replayed': 'true' } };
    }
    const reply = await create(client);
    await client.query('UPDATE sandbox.idempotency_keys SET response = $3 WHERE scope = $1 AND key = $2', [
      scope,
      key,
      JSON.stringify(reply.body),
    ]);
    return reply;
  });
}

/** Locks the account and fails 402 unless balance minus in-flight prices covers `price`. */
async function requireCredits(client: pg.PoolClient, price: number): Promise<void> {
  const account = await readAccount(client, true);
  if (account.available_credits < price) {
    throw new SandboxApiError(
      402,
      'insufficient_credits',
      `this costs ${price.toFixed(2)} credits but only ${account.available_credits.toFixed(2)} are available ` +
        `(balance ${account.balance_credits.toFixed(2)}, ${account.reserved_credits.toFixed(2)} reserved by work in flight)`,
    );
  }
}

// ---------------------------------------------------------------- launches

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
  engineModelsSynced.set(inference, { at: Date.now(), models });
  return models;
}
const engineModelsSynced = new WeakMap<InferenceContext, { at: number; models: InferenceModel[] }>();

export async function launchRun(ctx: SandboxContext, input: LaunchRunInput, key: string): Promise<Reply> {
  const inference = ctx.inference;
  if (inference && !(await getModel(ctx.pool, input.modelId))) await syncEngineModels(ctx, inference);
  // A file benchmark (BENCHMARKS_DIR or an upload) exists but only a real engine runs it: say so, not "not found".
  const fileBenchmark = findBenchmark(input.benchmarkId) ? null : await ctx.benchmarks.get(input.benchmarkId);
  const reply = await withIdempotency(ctx, 'runs', key, input, async (client) => {
    const model = await requireModel(client, input.modelId);
    if (model.engine !== null) {
      if (!inference) {
        throw new SandboxApiError(422, 'engine_unavailable', `model ${model.id} is served by ${model.engine}, which this platform is not configured with`);
      }
      return launchEngineRun(ctx, inference, client, input, model);
    }
    if (fileBenchmark) {
      throw unprocessable(
        `benchmark ${input.benchmarkId} is a benchmark file, which only a model on a real engine (MODELS_DIR or INFERENCE_URL) runs; model ${model.id} is simulated and runs only the built-in benchmarks`,
      );
    }
    const benchmark = requireBenchmark(input.benchmarkId);
    const price = priceRun(BenchmarkPricingSchema.parse(benchmark.pricing), model.params);
    await requireCredits(client, price);
    const now = ctx.now();
    const willFail = ctx.random() < ctx.faults.runFailureRate;
    const durationMs = runDurationMs(benchmark.questionCount, ctx.timeScale);
    const startsAt = new Date(now.getTime() + queueDelayMs(ctx.timeScale));
    const row = await insertRun(client, {
      benchmarkId: benchmark.id,
      modelId: model.id,
      questionCount: benchmark.questionCount,
      price,
      seed: ctx.seed,
      flipRate: ctx.simulation.rerunFlipRate,
      willFail,
      createdAt: now,
      startsAt,
      finishesAt: new Date(startsAt.getTime() + (willFail ? durationMs / 2 : durationMs)),
      durationMs,
    });
    ctx.logger.info({ runId: row.id, benchmarkId: benchmark.id, modelId: model.id, price }, 'sandbox run launched');
    return { status: 201, body: runToWire(row, ctx.publicUrl) };
  });
  if (reply.status === 201 && inference) inference.wake();
  return reply;
}

/** A run on the real engine: every question stored with its prompt, priced from the benchmark's size; the executor asks them. */
async function launchEngineRun(
  ctx: SandboxContext,
  inference: InferenceContext,
  client: pg.PoolClient,
  input: LaunchRunInput,
  model: ModelRow,
): Promise<Reply> {
  const items = await inference.benchmarkItems(input.benchmarkId);
  if (!items) throw notFound(`benchmark ${input.benchmarkId}`);
  if (items.length === 0) throw unprocessable(`benchmark ${input.benchmarkId} has no questions`);
  const questions = items.map((item) => ({ item, prompt: inference.renderPrompt(item) }));
  // A built-in benchmark keeps the price its catalogue entry quotes; a file benchmark's quote is its size.
  const builtIn = findBenchmark(input.benchmarkId);
  const price = builtIn
    ? priceRun(BenchmarkPricingSchema.parse(builtIn.pricing), model.params)
    : estimateRunCredits(questions, inference.creditsPer1kTokens);
  // Asked before the account is locked: the check waits on the endpoint.
  if (model.kind === 'fine_tuned' && model.base_model_id !== null) await requireAdapterServed(inference, client, model, questions);
  await requireCredits(client, price);
  const now = ctx.now();
  const row = await insertRun(client, {
    benchmarkId: input.benchmarkId,
    modelId: model.id,
    questionCount: items.length,
    price,
    seed: ctx.seed,
    flipRate: 0,
    willFail: false,
    createdAt: now,
    startsAt: now,
    finishesAt: now,
    durationMs: 0,
    engine: inference.engine.label,
    creditsPer1kTokens: inference.creditsPer1kTokens,
  });
  await insertRunQuestions(client, row.id, questions);
  ctx.logger.info({ runId: row.id, benchmarkId: input.benchmarkId, modelId: model.id, price, engine: row.engine }, 'engine run launched');
  return { status: 201, body: runToWire(row, ctx.publicUrl, now) };
}

/**
 * Refuses (422 `engine_unavailable`, before any charge) a run on a trained model whose endpoint
 * answers a question the model was trained on exactly as the base model does without listing the
 * adapter as loaded: it is serving the base model under the trained model's name.
 */
async function requireAdapterServed(
  inference: InferenceContext,
  client: pg.PoolClient,
  model: ModelRow,
  questions: ReadonlyArray<{ item: BenchmarkItem; prompt: string }>,
): Promise<void> {
  const served = await client.query<{ served_model: string | null }>('SELECT served_model FROM sandbox.models WHERE id = $1', [model.id]);
  const dataset = model.dataset_id ? await getDataset(client, model.dataset_id) : null;
  const trained = new Set(dataset?.trained_question_ids ?? []);
  const question = questions.find((q) => trained.has(q.item.id));
  const example = dataset?.examples?.[0];
  const probe = question
    ? { prompt: question.prompt, maxTokens: generationBudget(estimateTokens(longestAnswer(question.item)), question.item.max_tokens), ...(question.item.stop ? { stop: question.item.stop } : {}) }
    : example
      ? { prompt: example.prompt, maxTokens: generationBudget(estimateTokens(example.completion)) }
      : { prompt: questions[0]!.prompt, maxTokens: generationBudget(estimateTokens(longestAnswer(questions[0]!.item)), questions[0]!.item.max_tokens) };
  const check = await checkAdapterServed({
    engine: inference.engine,
    trainedModel: served.rows[0]?.served_model ?? model.id,
    baseModel: model.base_model_id!,
    ...probe,
  });
  if (!check.ok) throw new SandboxApiError(422, 'engine_unavailable', check.message);
}

export async function requireRun(ctx: SandboxContext, id: string): Promise<RunRow> {
  const run = await getRun(ctx.pool, id);
  if (!run) throw notFound(`run ${id}`);
  return run;
}

export function buildDataset(
  ctx: SandboxContext,
  input: { runId: string; augmentation: number; heldOutFraction: number; seed: number },
  key: string | undefined,
): Promise<Reply> {
  return withIdempotency(ctx, 'datasets', key, input, async (client) => {
    const run = await getRun(client, input.runId);
    if (!run) throw notFound(`run ${input.runId}`);
    if (run.status !== 'completed') {
      throw unprocessable(`run ${run.id} is ${run.status}; datasets are built from completed runs`);
    }
    if (run.engine !== null) return buildEngineDataset(ctx, client, run, input);
    const benchmark = requireBenchmark(run.benchmark_id);
    const lineage = await loadLineage(client, run.model_id, ctx.lineages);
    const summary = summarizeRun(run.seed, benchmark, lineage, { runId: run.id, rerunFlipRate: run.flip_rate });
    if (summary.failedQuestionIds.length === 0) throw unprocessable(`run ${run.id} has no failed questions`);
    const split = splitFailures(summary.failedQuestionIds, input.heldOutFraction, input.seed, run.id);
    if (split.trained.length === 0) throw unprocessable('the held-out fraction leaves no question to train on');
    let tokens = 0;
    for (const id of split.trained) tokens += questionAt(run.seed, benchmark, questionIndex(benchmark, id)!).tokens;
    const row = await insertDataset(client, {
      run_id: run.id,
      benchmark_id: benchmark.id,
      source_model_id: run.model_id,
      augmentation: input.augmentation,
      held_out_fraction: input.heldOutFraction,
      seed: input.seed,
      failed_question_count: summary.failedQuestionIds.length,
      trained_question_ids: split.trained,
      held_out_question_ids: split.heldOut,
      example_count: split.trained.length * input.augmentation,
      token_count: tokens * input.augmentation,
      created_at: ctx.now(),
    });
    return { status: 201, body: datasetToWire(row) };
  });
}

/**
 * A dataset from a run on a real engine: its failed questions (stored score below the threshold)
 * with their expected answers, split as a simulated run's, each trained-on question augmented in
 * prompt variants; tokens counted in the run model's tokenizer.
 */
async function buildEngineDataset(
  ctx: SandboxContext,
  client: pg.PoolClient,
  run: RunRow,
  input: { runId: string; augmentation: number; heldOutFraction: number; seed: number },
): Promise<Reply> {
  const answers = await runAnsweredQuestions(client, run.id);
  const unanswered = answers.filter((a) => a.score === null).length;
  if (unanswered > 0) throw unprocessable(`run ${run.id} has ${unanswered} questions without a stored score`);
  // An error answer is no evidence about the model: it is not trained on.
  const failed = answers.filter((a) => a.score! < FAILED_SCORE_THRESHOLD && a.error === null);
  if (failed.length === 0) throw unprocessable(`run ${run.id} has no failed questions${answers.some((a) => a.error !== null) ? ' (error answers are not trained on)' : ''}`);
  const split = splitFailures(
    failed.map((a) => a.question_id),
    input.heldOutFraction,
    input.seed,
    run.id,
  );
  if (split.trained.length === 0) throw unprocessable('the held-out fraction leaves no question to train on');
  const byId = new Map(failed.map((a) => [a.question_id, a.item as BenchmarkItem]));
  // Trained in the form the run asked in (one model, one style per run).
  const asked = failed.find((a) => a.style === 'chat' || a.style === 'completion')?.style as PromptStyle | undefined;
  const examples = buildTrainingExamples(
    split.trained.map((id) => byId.get(id)!),
    input.augmentation,
    asked,
  );
  const model = await getModel(client, run.model_id);
  const tokenizer = model?.base_model_id ?? run.model_id;
  let tokens = 0;
  for (const example of examples) {
    tokens += ctx.training
      ? await ctx.training.countTokens(tokenizer, example.prompt + example.completion)
      : Math.ceil(Buffer.byteLength(example.prompt + example.completion, 'utf8') / 3);
  }
  const row = await insertDataset(client, {
    run_id: run.id,
    benchmark_id: run.benchmark_id,
    source_model_id: run.model_id,
    augmentation: input.augmentation,
    held_out_fraction: input.heldOutFraction,
    seed: input.seed,
    failed_question_count: failed.length,
    trained_question_ids: split.trained,
    held_out_question_ids: split.heldOut,
    example_count: examples.length,
    token_count: tokens,
    created_at: ctx.now(),
    examples,
  });
  return { status: 201, body: datasetToWire(row) };
}

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
  const model = await requireModel(db, input.baseModelId);
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

// ---------------------------------------------------------------- completing due work

/** Stores a signed-on-delivery platform event in the webhook outbox (with the configured faults). */
export async function enqueueEvent(
  ctx: SandboxContext,
  client: pg.PoolClient,
  type: WebhookEventType,
  resourceId: string,
  at: Date,
): Promise<void> {
  const id = `evt_${randomBytes(12).toString('hex')}`;
  const body: WebhookEventWire = { type, id, created_at: at.toISOString(), data: { id: resourceId } };
  const faults = ctx.faults;
  const dropped = ctx.random() < faults.webhookDrop;
  const duplicated = ctx.random() < faults.webhookDuplicate;
  const held = ctx.random() < faults.webhookReorder;
  await insertOutboxEvent(client, {
    id,
    type,
    resourceId,
    body: JSON.stringify(body),
    status: dropped ? 'dropped' : 'pending',
    copies: duplicated ? (ctx.random() < 0.5 ? 2 : 3) : 1,
    held,
    nextAttemptAt: new Date(ctx.now().getTime() + faults.webhookDelayMs),
    createdAt: ctx.now(),
  });
}

async function advanceRun(ctx: SandboxContext, id: string, now: Date): Promise<void> {
  await withTransaction(ctx.pool, async (client) => {
    const run = await getRun(client, id, 'skip-locked');
    if (!run || (run.status !== 'queued' && run.status !== 'running')) return;
    if (run.status === 'queued' && run.starts_at <= now) {
      await updateRun(client, id, { status: 'running', started_at: run.starts_at });
      run.status = 'running';
    }
    if (run.status !== 'running' || run.finishes_at > now) return;
    if (run.will_fail) {
      await updateRun(client, id, {
        status: 'failed',
        charged: 0,
        finished_at: run.finishes_at,
        error_message: 'evaluation worker lost its GPU (sandbox-injected failure); nothing was charged',
      });
      await enqueueEvent(ctx, client, 'run.failed', id, run.finishes_at);
      ctx.logger.info({ runId: id }, 'sandbox run failed');
      return;
    }
    const benchmark = requireBenchmark(run.benchmark_id);
    const lineage = await loadLineage(client, run.model_id, ctx.lineages);
    const summary = summarizeRun(run.seed, benchmark, lineage, { runId: run.id, rerunFlipRate: run.flip_rate });
    await updateRun(client, id, {
      status: 'completed',
      score: summary.score,
      category_scores: summary.categoryScores,
      charged: run.price,
      finished_at: run.finishes_at,
    });
    await chargeAccount(client, run.price);
    await enqueueEvent(ctx, client, 'run.completed', id, run.finishes_at);
    ctx.logger.info({ runId: id, score: summary.score, charged: run.price }, 'sandbox run completed');
  });
}

export function fineTunedName(baseName: string, trainingId: string): string {
  const root = baseName.replace(/(-lora-\d+)+$/, '');
  return `${root}-lora-${trainingId.replace(/^tj_/, '')}`;
}

async function advanceTraining(ctx: SandboxContext, id: string, now: Date): Promise<void> {
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
    const base = (await getModel(client, training.base_model_id))!;
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

// ---------------------------------------------------------------- cancelling

function alreadyFinished(kind: 'run' | 'training', row: { id: string; status: string; finished_at: Date | null }): SandboxApiError {
  const when = row.finished_at ? ` at ${row.finished_at.toISOString()}` : '';
  return new SandboxApiError(409, 'already_finished', `${kind} ${row.id} already ${row.status}${when}; there is nothing to cancel`);
}

/**
 * What a run has cost when it is cancelled at `now`: a real run its stored answers' tokens at its
 * rate (the answers in flight are discarded, not charged), a simulated run the share of its
 * questions answered by now; never more than its price.
 */
async function cancelledRunCharge(
  client: pg.PoolClient,
  run: RunRow,
  now: Date,
): Promise<{ charged: number; promptTokens?: number; completionTokens?: number }> {
  if (run.engine !== null) {
    const totals = await answerTotals(client, run.id);
    const tokens = totals.promptTokens + totals.completionTokens;
    return {
      charged: Math.min(run.price, chargeFor(tokens, run.credits_per_1k_tokens ?? 0)),
      promptTokens: totals.promptTokens,
      completionTokens: totals.completionTokens,
    };
  }
  const done = simulatedRunDone({ ...run, status: 'running' }, now);
  return { charged: Math.min(run.price, roundCredits((run.price * done) / Math.max(1, run.question_count))) };
}

/**
 * `POST /runs/{id}/cancel`: a queued or running run becomes `cancelled` in one transaction with
 * its charge (what was done, never more than the price), the release of its reservation and the
 * `run.cancelled` event; the engine stops asking. Cancelling a cancelled run answers it again
 * (200); a completed or failed one is a 409 `already_finished`.
 */
export async function cancelRun(ctx: SandboxContext, id: string): Promise<Reply> {
  const { row, cancelled } = await withTransaction(ctx.pool, async (client) => {
    const run = await getRun(client, id, 'for-update');
    if (!run) throw notFound(`run ${id}`);
    if (run.status === 'cancelled') return { row: run, cancelled: false };
    if (run.status !== 'queued' && run.status !== 'running') throw alreadyFinished('run', run);
    const now = ctx.now();
    const cost = await cancelledRunCharge(client, run, now);
    const started = run.started_at ?? (run.engine === null && run.starts_at <= now ? run.starts_at : null);
    await updateRun(client, id, {
      status: 'cancelled',
      charged: cost.charged,
      started_at: started,
      finished_at: now,
      ...(cost.promptTokens !== undefined ? { prompt_tokens: cost.promptTokens, completion_tokens: cost.completionTokens } : {}),
    });
    await chargeAccount(client, cost.charged);
    await enqueueEvent(ctx, client, 'run.cancelled', id, now);
    ctx.logger.info({ runId: id, charged: cost.charged, engine: run.engine ?? 'simulator' }, 'run cancelled');
    return { row: (await getRun(client, id))!, cancelled: true };
  });
  if (cancelled && row.engine !== null) ctx.inference?.cancelled(row.id);
  return { status: 200, body: runToWire(row, ctx.publicUrl, ctx.now()) };
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

/** Starts and finishes every run and training that is due, one transaction each. */
export async function processDueWork(ctx: SandboxContext): Promise<void> {
  const now = ctx.now();
  for (const id of await dueRunIds(ctx.pool, now)) await advanceRun(ctx, id, now);
  for (const id of await dueTrainingIds(ctx.pool, now)) await advanceTraining(ctx, id, now);
  await ctx.training?.supervisor.tick();
}

// ---------------------------------------------------------------- model search

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
