// run-status: a run's status, score per category and price, compactly.
import { z } from 'zod';
import type { Run } from '@verdict/contract/platform';
import { requireOwnResource } from './own-resource.js';
import { defineTool } from './tool.js';

export const runStatus = defineTool({
  name: 'run-status',
  description: 'Read a benchmark run: status, overall score, per-category scores, price charged, link.',
  input: z.object({ runId: z.string().min(1) }),
  run: async ({ runId }, ctx) => {
    await requireOwnResource(ctx, 'run', runId);
    const run = await ctx.platform.getRun(runId);
    return { content: describeRun(run) };
  },
});

function pct(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? 'n/a' : `${(rate * 100).toFixed(1)}%`;
}

/**
 * The answers cut by the token budget and the error answers of a run on a real engine, said so
 * that a budget too small or a failing component is not mistaken for a weak model; null when none.
 */
export function budgetNote(run: Pick<Run, 'truncatedCount' | 'errorCount' | 'questionCount'>): string | null {
  const notes: string[] = [];
  if (run.truncatedCount) {
    notes.push(`${run.truncatedCount} of ${run.questionCount} answers were cut by the token budget (finish_reason length): a budget too small, not necessarily a weak model`);
  }
  if (run.errorCount) {
    notes.push(`${run.errorCount} question${run.errorCount === 1 ? '' : 's'} could not be answered or stored (error answers, counted wrong; each names the component that failed)`);
  }
  return notes.length > 0 ? notes.join('; ') : null;
}

export function describeRun(run: Run): string {
  const parts = [`Run ${run.id} (benchmark ${run.benchmarkId}, model ${run.modelId}): ${run.status}`];
  if (run.score !== null) {
    parts.push(`score ${pct(run.score)} over ${run.questionCount} questions`);
  }
  if (run.categoryScores?.length) {
    parts.push(`per category: ${run.categoryScores.map((c) => `${c.category} ${pct(c.score)} (${c.questionCount})`).join(', ')}`);
  }
  const cut = budgetNote(run);
  if (cut) parts.push(cut);
  parts.push(run.chargedCredits !== null ? `charged ${run.chargedCredits} credits` : `price ${run.priceCredits} credits`);
  if (run.errorMessage) parts.push(`error: ${run.errorMessage}`);
  parts.push(`link ${run.webUrl}`);
  return parts.join('; ');
}
