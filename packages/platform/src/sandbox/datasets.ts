// Training datasets built from a completed run's failed questions, simulated or from a real run's stored answers.
import { FAILED_SCORE_THRESHOLD } from '@verdict/contract/contract';
import type pg from 'pg';
import type { BenchmarkItem } from '../benchmarks/format.js';
import type { PromptStyle } from '../engines/inference.js';
import { buildTrainingExamples } from '../engines/training-dataset.js';
import { questionAt, questionIndex } from './catalogue.js';
import type { SandboxContext } from './context.js';
import { splitFailures, summarizeRun } from './simulator.js';
import { datasetToWire, insertDataset } from './store/datasets.js';
import { loadLineage } from './store/models.js';
import { modelById } from './models.js';
import { getRun, runAnsweredQuestions, type RunRow } from './store/runs.js';
import { withIdempotency } from './idempotency.js';
import { notFound, type Reply, requireBenchmark, unprocessable } from './replies.js';

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
  const model = await modelById(ctx, run.model_id, client);
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
