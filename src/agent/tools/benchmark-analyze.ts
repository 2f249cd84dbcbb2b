// benchmark-analyze: compares two runs in code (src/analysis) and attaches the comparison and the next steps.
import { z } from 'zod';
import { failure } from '../../errors.js';
import { compareRuns, formatPClause, formatPercent, formatPoints, formatPointsRange, questionChanges, type QuestionOutcome } from '../../analysis/index.js';
import type { Platform, QuestionResult, Run } from '@verdict/contract/platform';
import { listChatResources, upsertResource } from '../../store/resources.js';
import { chatTurnCosts } from '../../store/turns.js';
import { currentPlan, savePlan } from '../chat-plan.js';
import { verdictChoices } from '../next-steps.js';
import { updateStep } from '../plan.js';
import type { ComparedRun, CostLine, ReplyPart } from '../reply.js';
import { requireOwnResource } from './own-resource.js';
import { defineTool, toolError, type ToolContext } from './tool.js';

const PAGE = 500;

/** Every per-question result of a run (text, expected and model answers too), walking the cursor. */
export async function fetchResults(platform: Platform, runId: string): Promise<QuestionResult[]> {
  const out: QuestionResult[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await platform.listRunResults(runId, { limit: PAGE, ...(cursor ? { cursor } : {}) });
    out.push(...page.items);
    if (!page.nextCursor) return out;
    cursor = page.nextCursor;
  }
}

/** What the comparison needs of a run's results. */
export function toOutcomes(results: readonly QuestionResult[]): QuestionOutcome[] {
  return results.map((item) => ({
    questionId: item.questionId,
    category: item.category,
    ...(item.correct !== null ? { correct: item.correct } : {}),
    score: item.score,
  }));
}

/** Every per-question result of a run, walking the cursor; kept out of the model's context. */
export async function fetchOutcomes(platform: Platform, runId: string): Promise<QuestionOutcome[]> {
  return toOutcomes(await fetchResults(platform, runId));
}

/**
 * The comparisons' cost as it stands when their turn ends: this turn's own model calls are stored
 * by then, so the agent total equals the sum of the thread's turns. Computed when the turn's post
 * is written, so the message carries it from the start; left as the tool wrote it if the platform
 * cannot be read now.
 */
export async function withFinalCost(ctx: ToolContext, parts: ReplyPart[]): Promise<ReplyPart[]> {
  if (!parts.some((p) => p.kind === 'comparison')) return parts;
  try {
    const { costs, agentUsd, agentTurnsUsd } = await chatCosts(ctx);
    const plan = currentPlan(ctx);
    const started = plan ? Date.parse(plan.agreedAt) : ctx.chat.created_at.getTime();
    const cost = { costs, agentUsd, agentTurnsUsd, elapsedMs: Date.now() - started };
    return parts.map((p) => (p.kind === 'comparison' ? { ...p, cost } : p));
  } catch (error) {
    ctx.logger.warn({ err: error }, 'could not compute the final cost of the comparison; keeping the one written by the tool');
    return parts;
  }
}

async function chatCosts(ctx: ToolContext): Promise<{ costs: CostLine[]; agentUsd: number; agentTurnsUsd: number[] }> {
  const resources = await listChatResources(ctx.db, ctx.chat.team_id, ctx.chat.id);
  const labels: Record<string, string> = { baseline_run: 'baseline run', train: 'training', trained_run: 'trained-model run' };
  const costs: CostLine[] = [];
  for (const r of resources) {
    if (r.kind !== 'run' && r.kind !== 'training') continue;
    let charged = r.price_charged !== null ? Number(r.price_charged) : null;
    if (charged === null) {
      // Read the platform for what it charged since the event (the sweep may not have run).
      const fresh = r.kind === 'run' ? await ctx.platform.getRun(r.platform_id) : await ctx.platform.getTraining(r.platform_id);
      charged = 'chargedCredits' in fresh ? fresh.chargedCredits : fresh.priceChargedCredits;
    }
    costs.push({
      label: `${labels[r.plan_step ?? ''] ?? r.kind} ${r.platform_id}`,
      credits: charged ?? Number(r.price_estimate ?? 0),
      charged: charged !== null,
      estimated: r.price_estimate !== null ? Number(r.price_estimate) : null,
    });
  }
  const turns = await chatTurnCosts(ctx.db, ctx.chat.team_id, ctx.chat.id);
  return { costs, agentUsd: turns.totalUsd, agentTurnsUsd: turns.turnsUsd };
}

function comparedRun(run: Run): ComparedRun {
  return {
    runId: run.id,
    modelId: run.modelId,
    ...(run.truncatedCount !== null ? { truncated: run.truncatedCount } : {}),
    ...(run.errorCount !== null ? { errors: run.errorCount } : {}),
  };
}

/** What the two runs' budget cuts and error answers were, or null when neither run had any. */
export function budgetFact(before: ComparedRun, after: ComparedRun): string | null {
  const cut = (before.truncated ?? 0) + (after.truncated ?? 0);
  const errors = (before.errors ?? 0) + (after.errors ?? 0);
  if (cut === 0 && errors === 0) return null;
  const parts: string[] = [];
  if (cut > 0) parts.push(`answers cut by the token budget: ${before.truncated ?? 0} before, ${after.truncated ?? 0} after (a budget too small, not necessarily a weak model)`);
  if (errors > 0) parts.push(`error answers (not answered or not stored, counted wrong): ${before.errors ?? 0} before, ${after.errors ?? 0} after`);
  return `${parts.join('; ')}.`;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function requireCompleted(run: Run): void {
  if (run.status !== 'completed') throw toolError(failure('compare_not_completed', { id: run.id, status: run.status }));
}

export const benchmarkAnalyze = defineTool({
  name: 'benchmark-analyze',
  description:
    'Compare two completed runs of the same benchmark (before and after training), question by question, in code: accuracy with intervals, fixed/broken questions, exact McNemar p-value, trained-on vs not-trained-on split, noise floor, and a verdict with its reason. Attaches the comparison table, the cost of every step and next-step buttons to your message. Free.',
  input: z.object({ beforeRunId: z.string().min(1), afterRunId: z.string().min(1) }),
  run: async ({ beforeRunId, afterRunId }, ctx) => {
    await requireOwnResource(ctx, 'run', beforeRunId);
    await requireOwnResource(ctx, 'run', afterRunId);
    const [before, after] = await Promise.all([ctx.platform.getRun(beforeRunId), ctx.platform.getRun(afterRunId)]);
    requireCompleted(before);
    requireCompleted(after);
    if (before.benchmarkId !== after.benchmarkId) {
      throw toolError(failure('compare_other_benchmarks', { before: before.id, after: after.id, beforeBenchmark: before.benchmarkId, afterBenchmark: after.benchmarkId }));
    }
    const [benchmark, afterModel, beforeResults, afterResults] = await Promise.all([
      ctx.platform.getBenchmark(before.benchmarkId),
      ctx.platform.getModel(after.modelId),
      fetchResults(ctx.platform, before.id),
      fetchResults(ctx.platform, after.id),
    ]);
    const beforeOutcomes = toOutcomes(beforeResults);
    const afterOutcomes = toOutcomes(afterResults);
    let trainedOn: string[] | undefined;
    let heldOut: string[] | undefined;
    if (afterModel.kind === 'fine_tuned' && afterModel.datasetId) {
      const dataset = await ctx.platform.getDataset(afterModel.datasetId);
      trainedOn = dataset.trainedQuestionIds;
      heldOut = dataset.heldOutQuestionIds;
    }
    // A rerun of the "before" model in this chat gives the noise floor.
    const resources = await listChatResources(ctx.db, ctx.chat.team_id, ctx.chat.id);
    const rerun = resources.find(
      (r) =>
        r.kind === 'run' &&
        r.platform_id !== before.id &&
        r.status === 'completed' &&
        (r.details as { modelId?: string; benchmarkId?: string }).modelId === before.modelId &&
        (r.details as { benchmarkId?: string }).benchmarkId === before.benchmarkId,
    );
    const baselineRerun = rerun ? await fetchOutcomes(ctx.platform, rerun.platform_id) : undefined;
    const comparison = compareRuns({
      before: beforeOutcomes,
      after: afterOutcomes,
      scoring: benchmark.scoring,
      ...(trainedOn ? { trainedOn } : {}),
      ...(heldOut ? { heldOut } : {}),
      ...(baselineRerun ? { baselineRerun } : {}),
    });

    const plan = currentPlan(ctx);
    if (plan) await savePlan(ctx, updateStep(plan, 'compare', { status: 'completed' }));
    await upsertResource(ctx.db, {
      teamId: ctx.chat.team_id,
      chatId: ctx.chat.id,
      turnId: ctx.turn.id,
      kind: 'comparison',
      platformId: `${before.id}:${after.id}`,
      planStep: plan ? 'compare' : null,
      status: 'completed',
      priceEstimate: 0,
      webUrl: null,
      details: { comparison, beforeRunId: before.id, afterRunId: after.id },
    });
    const { costs, agentUsd, agentTurnsUsd } = await chatCosts(ctx);
    const started = plan ? Date.parse(plan.agreedAt) : ctx.chat.created_at.getTime();
    const parts: ReplyPart[] = [
      {
        kind: 'comparison',
        comparison,
        before: comparedRun(before),
        after: comparedRun(after),
        cost: { costs, agentUsd, agentTurnsUsd, elapsedMs: Date.now() - started },
        questions: questionChanges(beforeResults, afterResults),
      },
      {
        kind: 'choices',
        options: verdictChoices(comparison, {
          benchmarkId: before.benchmarkId,
          baseModelId: before.modelId,
          trainedModelId: after.modelId,
          beforeRunId: before.id,
          afterRunId: after.id,
          augmentation: plan?.augmentation ?? 5,
        }),
      },
    ];
    const o = comparison.overall;
    const facts = [
      `Verdict: ${comparison.verdict.headline}. Reason: ${comparison.verdict.reason}`,
      `All ${o.questions} questions: ${formatPercent(o.accuracyBefore.rate)} -> ${formatPercent(o.accuracyAfter.rate)} (${formatPoints(o.change.estimate)}, 95% CI ${formatPointsRange(o.change.interval)}), fixed ${o.table.fixed}, broken ${o.table.broken}, both right ${o.table.bothRight}, both wrong ${o.table.bothWrong}, McNemar ${formatPClause(o.mcnemarP)}.`,
    ];
    if (comparison.training) {
      const t = comparison.training;
      facts.push(`Questions trained on (${t.trainedOn.questions}): ${formatPercent(t.trainedOn.accuracyBefore.rate)} -> ${formatPercent(t.trainedOn.accuracyAfter.rate)}. ${t.memorizationNote}`);
      const otherNote = t.notTrainedOnNote ?? 'mostly questions that were right before, which can only break: not a fair measure alone';
      facts.push(`Questions not trained on (${t.notTrainedOn.questions}): ${formatPercent(t.notTrainedOn.accuracyBefore.rate)} -> ${formatPercent(t.notTrainedOn.accuracyAfter.rate)}. ${capitalize(otherNote.replace(/\.$/, ''))}.`);
      if (t.generalization) {
        facts.push(`Generalization estimate (untrained questions weighted to all by how they did before; the verdict's basis): ${formatPoints(t.generalization.estimate)}, 95% CI ${formatPointsRange(t.generalization.interval)}.`);
      }
      if (t.generalizationNote) facts.push(t.generalizationNote);
    }
    if (comparison.noiseFloor) facts.push(comparison.noiseFloor.note);
    const budget = budgetFact(comparedRun(before), comparedRun(after));
    if (budget) facts.push(capitalize(budget));
    facts.push(`Cost: ${costs.map((c) => `${c.label} ${c.credits} credits${c.charged ? '' : ' (estimated)'}`).join(', ')}; agent $${agentUsd.toFixed(4)} so far.`);
    facts.push('The verdict and every figure above were computed in code; quote them as they are. The table (headed by that verdict), the cost and three next-step buttons are attached to your message; write 2-4 sentences of narrative.');
    return { content: facts.join('\n'), parts };
  },
});
