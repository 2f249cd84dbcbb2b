// Benchmark runs: launching one (simulated or on the real engine, a trained model's adapter checked first), completing a simulated one, cancelling.
import { priceRun, roundCredits, BenchmarkPricingSchema, type LaunchRunInput } from '@verdict/contract/contract';
import type pg from 'pg';
import type { BenchmarkItem } from '../benchmarks/format.js';
import { checkAdapterServed } from '../engines/adapter-check.js';
import { estimateTokens, generationBudget } from '../engines/inference.js';
import { chargeFor, estimateRunCredits, longestAnswer } from '../engines/run-pricing.js';
import { answerTotals, insertRunQuestions } from './answers.js';
import { findBenchmark } from './catalogue.js';
import type { InferenceContext, SandboxContext } from './context.js';
import { summarizeRun } from './simulator.js';
import { getDataset } from './store/datasets.js';
import { withTransaction } from './store/db.js';
import { loadLineage, type ModelRow } from './store/models.js';
import { getRun, insertRun, runToWire, simulatedRunDone, updateRun, type RunRow } from './store/runs.js';
import { chargeAccount } from './store/settings.js';
import { enqueueEvent } from './events.js';
import { requireCredits, withIdempotency } from './idempotency.js';
import { modelById, requireModel, syncEngineModels } from './models.js';
import { queueDelayMs, runDurationMs } from './pricing.js';
import { alreadyFinished, notFound, type Reply, requireBenchmark, SandboxApiError, unprocessable } from './replies.js';

export async function launchRun(ctx: SandboxContext, input: LaunchRunInput, key: string): Promise<Reply> {
  const inference = ctx.inference;
  if (inference && !(await modelById(ctx, input.modelId))) await syncEngineModels(ctx, inference);
  // A file benchmark (BENCHMARKS_DIR or an upload) exists but only a real engine runs it: say so, not "not found".
  const fileBenchmark = findBenchmark(input.benchmarkId) ? null : await ctx.benchmarks.get(input.benchmarkId);
  const reply = await withIdempotency(ctx, 'runs', key, input, async (client) => {
    const model = await requireModel(ctx, client, input.modelId);
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

export async function advanceRun(ctx: SandboxContext, id: string, now: Date): Promise<void> {
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
