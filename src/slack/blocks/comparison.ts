// Block Kit for a comparison part: a table built from the analysis, the verdict, its notes, the cost.
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
import type { KnownBlock, RawTextElement } from '@slack/types';
import type { ComparisonPart, CostFigures, CostLine } from '../../agent/reply.js';
import { SLACK_LIMITS, truncate } from '../limits.js';
import { escapeMrkdwn, truncateMrkdwn } from '../mrkdwn.js';
import { accuracyChart, accuracyChartBlock } from '../chart/accuracy-chart.js';
import { buildQuestionTable, questionChangesText, type DataTableBlock } from './question-table.js';

const VERDICT_ICONS: Record<Comparison['verdict']['outcome'], string> = {
  improved: ':white_check_mark:',
  regressed: ':x:',
  no_detectable_change: ':heavy_minus_sign:',
  memorized: ':brain:',
};

type Cell = RawTextElement;
/** Slack refuses an empty raw_text cell (its minimum length is 1): a cell with nothing to say shows a dash. */
const cell = (text: string): Cell => ({ type: 'raw_text', text: text === '' ? '–' : truncate(text, SLACK_LIMITS.tableCellText) });

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

export function costBlock(cost: CostFigures): KnownBlock {
  return {
    type: 'section',
    text: { type: 'mrkdwn', text: truncate(costSummary(cost.costs, cost.agentUsd, cost.elapsedMs, cost.agentTurnsUsd), SLACK_LIMITS.sectionText) },
  };
}

/**
 * The table as monospaced text, for a message that already holds Slack's one table: cut to a
 * section with "+N more rows" when it does not fit.
 */
function tableAsText(rows: Cell[][]): KnownBlock {
  const lines = rows.map((row) => row.map((c) => c.text).join(' | '));
  const room = SLACK_LIMITS.sectionText - 8;
  let body = '';
  let shown = 0;
  for (const line of lines) {
    const more = `\n+${lines.length - shown} more rows`;
    if (body.length + line.length + 1 + more.length > room) break;
    body += `${shown ? '\n' : ''}${line}`;
    shown += 1;
  }
  if (shown < lines.length) body += `\n+${lines.length - shown} more rows`;
  return { type: 'section', text: { type: 'mrkdwn', text: truncateMrkdwn(`\`\`\`${body}\`\`\``, SLACK_LIMITS.sectionText) } };
}

/** The answers cut by the token budget and the error answers of both runs, when either had any. */
export function budgetNote(part: Pick<ComparisonPart, 'before' | 'after'>): string | null {
  const { before, after } = part;
  const notes: string[] = [];
  if ((before.truncated ?? 0) + (after.truncated ?? 0) > 0) {
    notes.push(`:scissors: Cut by the token budget: ${before.truncated ?? 0} answers before, ${after.truncated ?? 0} after (a budget too small, not necessarily a weak model).`);
  }
  if ((before.errors ?? 0) + (after.errors ?? 0) > 0) {
    notes.push(`:warning: Error answers (not answered or not stored, counted wrong): ${before.errors ?? 0} before, ${after.errors ?? 0} after.`);
  }
  return notes.length > 0 ? notes.join(' ') : null;
}

/** How the questions that changed are shown: Slack's data table, text (where the table is refused), or not at all. */
export type QuestionsShown = 'table' | 'text' | 'none';

/** The questions that changed, as a data table within what the summary table left of the message's cell budget, or as text. */
function questionBlocks(part: ComparisonPart, shown: QuestionsShown, summaryRows: Cell[][] | null): Array<KnownBlock | DataTableBlock> {
  if (!part.questions || shown === 'none') return [];
  if (shown === 'table') {
    const used = summaryRows ? summaryRows.reduce((sum, row) => sum + row.reduce((s, c) => s + c.text.length, 0), 0) : 0;
    const table = buildQuestionTable(part.questions, SLACK_LIMITS.dataTableMessageChars - used);
    if (table) return [table];
  }
  const text = questionChangesText(part.questions);
  return text ? [{ type: 'section', text: { type: 'mrkdwn', text } }] : [];
}

/**
 * The comparison's blocks: header, verdict, table, notes, the questions that changed, cost.
 * `tableAllowed` is false when the message already holds a table (Slack allows one): the table is
 * then shown as text. `questions` says how the questions that changed are shown (default: a data table);
 * `chartBlock` adds Slack's bar chart of the accuracies (the renderer asks for it at its first level).
 */
export function buildComparisonBlocks(
  part: ComparisonPart,
  options: { tableAllowed?: boolean; questions?: QuestionsShown; chartBlock?: boolean } = {},
): KnownBlock[] {
  const { comparison } = part;
  const v = comparison.verdict;
  const rows = comparisonRows(comparison);
  const blocks: KnownBlock[] = [
    { type: 'header', text: { type: 'plain_text', text: truncate(`Before vs after: ${part.before.modelId} → ${part.after.modelId}`, SLACK_LIMITS.headerText) } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: truncate(`*${VERDICT_ICONS[v.outcome]} ${v.headline}*\n${v.reason}`, SLACK_LIMITS.sectionText) },
    },
    options.tableAllowed === false
      ? tableAsText(rows)
      : { type: 'table', column_settings: [{ is_wrapped: true }, { align: 'right' }, { align: 'right' }, { align: 'right' }], rows },
  ];
  const notes: string[] = [];
  if (comparison.training) {
    notes.push(comparison.training.memorizationNote);
    if (comparison.training.notTrainedOnNote) notes.push(comparison.training.notTrainedOnNote);
    // A memorized verdict's headline and reason already say it; the warning would repeat them.
    if (comparison.training.generalizationNote && v.outcome !== 'memorized') notes.push(`:warning: ${comparison.training.generalizationNote}`);
  }
  if (comparison.noiseFloor) notes.push(comparison.noiseFloor.note);
  const budget = budgetNote(part);
  if (budget) notes.push(budget);
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
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: truncate(note, SLACK_LIMITS.contextText) }] });
  }
  // Slack's bar chart and data table are not in @slack/types 3.2: they travel with the known blocks as they are.
  if (options.chartBlock && comparison.overall.questions > 0) {
    blocks.push(accuracyChartBlock(accuracyChart(comparison, { before: part.before.modelId, after: part.after.modelId })) as unknown as KnownBlock);
  }
  blocks.push(...(questionBlocks(part, options.questions ?? 'table', options.tableAllowed === false ? null : rows) as KnownBlock[]));
  blocks.push(costBlock(part.cost));
  return blocks;
}

export type { CostLine };
