// Block Kit for the comparison: a table built from the analysis, the verdict, the cost, next-step buttons.
import {
  formatCount,
  formatPercent,
  formatPointsRange,
  formatPValue,
  formatSignedPoints,
  type Comparison,
  type PairedFigures,
  type Proportion,
} from '../../analysis/index.js';
import type { NextAction } from '../../agent/spend-guard.js';
import { ACTION_IDS, indexedActionId } from '../action-ids.js';
import { SLACK_LIMITS, truncate } from '../limits.js';
import { escapeMrkdwn } from '../mrkdwn.js';

export interface CostLine {
  label: string;
  /** Credits charged, or estimated while not charged yet. */
  credits: number;
  charged: boolean;
  /** The estimate given at launch. */
  estimated: number | null;
}

export interface ComparisonView {
  comparison: Comparison;
  before: { runId: string; modelId: string };
  after: { runId: string; modelId: string };
  costs: CostLine[];
  agentUsd: number;
  /** The agent's cost of each turn so far, oldest first (this turn's is still running). */
  agentTurnsUsd?: number[];
  elapsedMs: number | null;
  nextSteps: Array<{ label: string; action: NextAction }>;
}

const VERDICT_ICONS: Record<Comparison['verdict']['outcome'], string> = {
  improved: ':white_check_mark:',
  regressed: ':x:',
  no_detectable_change: ':heavy_minus_sign:',
  memorized: ':brain:',
};

type Cell = { type: 'raw_text'; text: string };
const cell = (text: string): Cell => ({ type: 'raw_text', text: truncate(text, 200) });

/** "59.0% (49.2–68.1)": a rate with its Wilson 95% interval, in percent. */
function rateWithInterval(p: Proportion): string {
  if (p.rate === null) return 'n/a';
  const bound = (x: number) => (x * 100).toFixed(1);
  return `${formatPercent(p.rate)} (${bound(p.interval.lower)}–${bound(p.interval.upper)})`;
}

function figureRow(label: string, f: PairedFigures): Cell[] {
  if (f.questions === 0) return [cell(label), cell('n/a'), cell('n/a'), cell('no questions')];
  const change = f.change.estimate === null ? 'n/a' : `${formatSignedPoints(f.change.estimate)} pts (${formatPointsRange(f.change.interval)})`;
  return [
    cell(`${label} (${formatCount(f.questions)})`),
    cell(rateWithInterval(f.accuracyBefore)),
    cell(rateWithInterval(f.accuracyAfter)),
    cell(change),
  ];
}

/** Graded runs: the mean score, the figure the verdict is decided on, with its paired bootstrap interval. */
function meanScoreRow(label: string, f: PairedFigures): Cell[] | null {
  const g = f.graded;
  if (!g || f.questions === 0) return null;
  const change = g.meanChange === null ? 'n/a' : `${formatSignedPoints(g.meanChange)} pts${g.interval ? ` (${formatPointsRange(g.interval)})` : ''}`;
  return [cell(`${label} (${formatCount(f.questions)})`), cell(formatPercent(g.meanBefore)), cell(formatPercent(g.meanAfter)), cell(change)];
}

/**
 * The comparison table rows: accuracy with Wilson intervals, the 2x2 table, the training split,
 * categories; within Slack's row limit (categories are cut with "+N more").
 */
export function comparisonRows(comparison: Comparison): Cell[][] {
  const o = comparison.overall;
  const graded = comparison.scoring === 'graded';
  const rows: Cell[][] = [[cell('Questions'), cell('Before (95% CI)'), cell('After (95% CI)'), cell('Change (95% CI)')]];
  const mean = graded ? meanScoreRow('Mean score, all questions', o) : null;
  if (mean) rows.push(mean);
  rows.push(figureRow(graded ? 'Full marks, all questions' : 'All questions', o));
  const t = comparison.training;
  if (t) {
    rows.push(figureRow('Trained on (memorization check)', t.trainedOn));
    // All right before: these can only stay right or break, so the row checks forgetting only.
    const forgettingLabel = `Not trained on, all ${graded ? 'at full marks' : 'right'} before (forgetting check)`;
    rows.push(figureRow(t.notTrainedOnNote ? forgettingLabel : 'Not trained on', t.notTrainedOn));
    const g = t.generalization;
    if (g) {
      // The verdict's figure: the untrained questions weighted back to all of them by how they did before.
      rows.push([
        cell(`Not trained on, weighted to all (${formatCount(o.questions)})`),
        cell(''),
        cell(''),
        cell(`${formatSignedPoints(g.estimate)} pts (${formatPointsRange(g.interval)})`),
      ]);
    }
    if (t.heldOut && t.heldOut.questions > 0) rows.push(figureRow('Held out', t.heldOut));
  }
  rows.push([cell('Fixed (wrong → right)'), cell(''), cell(formatCount(o.table.fixed)), cell('')]);
  rows.push([cell('Broken (right → wrong)'), cell(''), cell(formatCount(o.table.broken)), cell('')]);
  rows.push([cell('Both right'), cell(''), cell(formatCount(o.table.bothRight)), cell('')]);
  rows.push([cell('Both wrong'), cell(''), cell(formatCount(o.table.bothWrong)), cell('')]);
  rows.push([cell('McNemar exact p'), cell(''), cell(''), cell(formatPValue(o.mcnemarP))]);
  if (comparison.noiseFloor) {
    rows.push([cell('Rerun flips (noise floor)'), cell(''), cell(''), cell(formatPercent(comparison.noiseFloor.flips.rate))]);
  }
  const room = SLACK_LIMITS.tableRows - rows.length;
  const categories = comparison.categories.length > 1 ? comparison.categories : [];
  for (const category of categories.slice(0, Math.max(0, room - (categories.length > room ? 1 : 0)))) {
    rows.push(figureRow(`Category: ${escapeMrkdwn(category.category)}`, category));
  }
  if (categories.length > room) {
    rows.push([cell(`+${categories.length - (room - 1)} more categories`), cell(''), cell(''), cell('')]);
  }
  return rows.slice(0, SLACK_LIMITS.tableRows);
}

function formatElapsed(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

export function costSummary(costs: readonly CostLine[], agentUsd: number, elapsedMs: number | null, agentTurnsUsd: readonly number[] = []): string {
  const credits = costs.reduce((sum, c) => sum + c.credits, 0);
  const parts = costs.map((c) => {
    const label = escapeMrkdwn(c.label);
    if (!c.charged) return `${label} ${c.credits.toFixed(2)} cr (est.)`;
    const estimate = c.estimated !== null && Math.abs(c.estimated - c.credits) >= 0.005 ? ` (est. ${c.estimated.toFixed(2)})` : '';
    return `${label} ${c.credits.toFixed(2)} cr${estimate}`;
  });
  const perTurn = agentTurnsUsd.length > 1 ? ` (${agentTurnsUsd.length} turns: ${agentTurnsUsd.map((u) => `$${u.toFixed(4)}`).join(' + ')})` : '';
  parts.push(`agent $${agentUsd.toFixed(4)}${perTurn}`);
  const total = `*Total:* ${credits.toFixed(2)} credits + $${agentUsd.toFixed(4)} agent`;
  return `${total}${elapsedMs !== null ? ` · elapsed ${formatElapsed(elapsedMs)}` : ''}\n${parts.join(' · ')}`;
}

/** The block id of the cost line, so the turn that posts the comparison can write its final figures. */
export const COST_BLOCK_ID = 'verdict_cost';

export function costBlock(costs: readonly CostLine[], agentUsd: number, elapsedMs: number | null, agentTurnsUsd: readonly number[] = []): unknown {
  return { type: 'section', block_id: COST_BLOCK_ID, text: { type: 'mrkdwn', text: truncate(costSummary(costs, agentUsd, elapsedMs, agentTurnsUsd), SLACK_LIMITS.sectionText) } };
}

export function buildComparisonBlocks(view: ComparisonView): unknown[] {
  const { comparison } = view;
  const v = comparison.verdict;
  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: truncate(`Before vs after: ${view.before.modelId} → ${view.after.modelId}`, SLACK_LIMITS.headerText) } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: truncate(`*${VERDICT_ICONS[v.outcome]} ${v.headline}*\n${v.reason}`, SLACK_LIMITS.sectionText) },
    },
    { type: 'table', column_settings: [{ is_wrapped: true }, { align: 'right' }, { align: 'right' }, { align: 'right' }], rows: comparisonRows(comparison) },
  ];
  const notes: string[] = [];
  if (comparison.training) {
    notes.push(comparison.training.memorizationNote);
    if (comparison.training.notTrainedOnNote) notes.push(comparison.training.notTrainedOnNote);
    // A memorized verdict's headline and reason already say it; the warning would repeat them.
    if (comparison.training.generalizationNote && v.outcome !== 'memorized') notes.push(`:warning: ${comparison.training.generalizationNote}`);
  }
  if (comparison.noiseFloor) notes.push(comparison.noiseFloor.note);
  const basis = comparison.training?.generalizationMeasured ? comparison.training.notTrainedOn : comparison.overall;
  const detectable = basis.detectableChange.value;
  if (v.outcome === 'no_detectable_change' && detectable !== null) {
    notes.push(`With ${formatCount(basis.questions)} questions, a change smaller than about ${(detectable * 100).toFixed(1)} points would not have shown (80% power).`);
  }
  const o = comparison.overall;
  if (o.topFixed.length) notes.push(`Fixed: ${o.topFixed.map(escapeMrkdwn).join(', ')}${o.table.fixed > o.topFixed.length ? ` (+${o.table.fixed - o.topFixed.length} more)` : ''}`);
  if (o.topBroken.length) notes.push(`Broken: ${o.topBroken.map(escapeMrkdwn).join(', ')}${o.table.broken > o.topBroken.length ? ` (+${o.table.broken - o.topBroken.length} more)` : ''}`);
  if (comparison.coverage.onlyBefore.count + comparison.coverage.onlyAfter.count > 0) {
    notes.push(`Not compared: ${comparison.coverage.onlyBefore.count} question(s) only in the first run, ${comparison.coverage.onlyAfter.count} only in the second.`);
  }
  for (const note of notes.filter(Boolean)) {
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: truncate(note, SLACK_LIMITS.sectionText) }] });
  }
  blocks.push(costBlock(view.costs, view.agentUsd, view.elapsedMs, view.agentTurnsUsd));
  if (view.nextSteps.length > 0) {
    blocks.push({
      type: 'actions',
      elements: view.nextSteps.slice(0, SLACK_LIMITS.actionsElements).map((step, i) => ({
        type: 'button',
        text: { type: 'plain_text', text: truncate(step.label, SLACK_LIMITS.buttonText) },
        action_id: indexedActionId(ACTION_IDS.nextStep, i),
        value: truncate(JSON.stringify({ kind: 'next', action: step.action }), SLACK_LIMITS.buttonValue),
        ...(i === 0 ? { style: 'primary' } : {}),
      })),
    });
  }
  return blocks;
}

/** Three next steps that fit the verdict. */
export function nextStepsFor(
  comparison: Comparison,
  refs: { benchmarkId: string; baseModelId: string; trainedModelId: string; beforeRunId: string; afterRunId: string; augmentation: number },
): Array<{ label: string; action: NextAction }> {
  const retrainHeldOut = {
    label: 'Retrain with 30% held out',
    action: { action: 'train_on_failures', runId: refs.beforeRunId, modelId: refs.baseModelId, heldOutFraction: 0.3, augmentation: refs.augmentation } as NextAction,
  };
  const trainRemaining = {
    label: 'Train again on remaining failures',
    action: { action: 'train_on_failures', runId: refs.afterRunId, modelId: refs.trainedModelId, heldOutFraction: 0, augmentation: refs.augmentation } as NextAction,
  };
  const keepBase = { label: 'Keep the base model', action: { action: 'keep_model', modelId: refs.baseModelId } as NextAction };
  const keepTrained = { label: 'Keep the trained model', action: { action: 'keep_model', modelId: refs.trainedModelId } as NextAction };
  const rerunBase = {
    label: 'Rerun base for noise floor',
    action: { action: 'run_benchmark', benchmarkId: refs.benchmarkId, modelId: refs.baseModelId } as NextAction,
  };
  const generalizationMeasured = comparison.training?.generalizationMeasured ?? true;
  if (!generalizationMeasured) return [retrainHeldOut, trainRemaining, keepBase];
  if (comparison.verdict.outcome === 'improved') return [keepTrained, trainRemaining, rerunBase];
  return [retrainHeldOut, keepBase, rerunBase];
}
