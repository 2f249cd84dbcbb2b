import { describe, expect, it } from 'vitest';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import { nextStepsFor, verdictChoices } from '../../src/agent/next-steps.js';
import type { ComparisonPart } from '../../src/agent/reply.js';
import { buildComparisonBlocks, comparisonRows, costSummary } from '../../src/slack/blocks/comparison.js';
import { renderReply } from '../../src/slack/blocks/reply.js';
import { SLACK_LIMITS } from '../../src/slack/limits.js';
import { wilsonInterval } from '../../src/analysis/index.js';
import { validateBlocks } from '../kit/fakes/slack/index.js';

function outcomes(n: number, correct: (i: number) => boolean, categories = 4): QuestionOutcome[] {
  return Array.from({ length: n }, (_, i) => ({ questionId: `q${String(i).padStart(5, '0')}`, category: `c${i % categories}`, correct: correct(i) }));
}

const refs = { benchmarkId: '104', baseModelId: 'base', trainedModelId: 'ft', beforeRunId: 'r1', afterRunId: 'r2', augmentation: 5 };

function view(comparison: ReturnType<typeof compareRuns>): ComparisonPart {
  return {
    kind: 'comparison',
    comparison,
    before: { runId: 'r1', modelId: 'base' },
    after: { runId: 'r2', modelId: 'ft' },
    cost: {
      costs: [
        { label: 'baseline run r1', credits: 4, charged: true, estimated: 4 },
        { label: 'training t1', credits: 4.5, charged: true, estimated: 4.11 },
      ],
      agentUsd: 0.0325,
      agentTurnsUsd: [0.01, 0.0225],
      elapsedMs: 95_000,
    },
  };
}

/** The comparison as the turn's post shows it: the comparison part and the verdict's next steps. */
function posted(comparison: ReturnType<typeof compareRuns>) {
  return renderReply({ to: 'UOWNER', text: 'Here is the comparison.', parts: [view(comparison), { kind: 'choices', options: verdictChoices(comparison, refs) }] }).blocks;
}

describe('comparison blocks', () => {
  it('says how many answers the token budget cut and how many were error answers, in each run', () => {
    const comparison = compareRuns({ before: outcomes(40, (i) => i % 4 === 0), after: outcomes(40, (i) => i % 2 === 0) });
    const part = { ...view(comparison), before: { runId: 'r1', modelId: 'base', truncated: 7, errors: 0 }, after: { runId: 'r2', modelId: 'ft', truncated: 2, errors: 1 } };
    const text = JSON.stringify(buildComparisonBlocks(part));
    expect(text).toContain('Cut by the token budget: 7 answers before, 2 after (a budget too small, not necessarily a weak model).');
    expect(text).toContain('Error answers (not answered or not stored, counted wrong): 0 before, 1 after.');
    expect(validateBlocks(buildComparisonBlocks(part), 'message')).toEqual([]);
    // Runs with neither (and parts stored before the counts existed) say nothing about them.
    expect(JSON.stringify(buildComparisonBlocks(view(comparison)))).not.toContain('token budget');
  });

  it('shows the table, the verdict and three buttons with unique action ids', () => {
    const before = outcomes(100, (i) => i % 10 < 6);
    const after = outcomes(100, (i) => i % 10 < 8);
    const comparison = compareRuns({ before, after });
    const blocks = posted(comparison) as Array<{ type: string; rows?: unknown[][]; elements?: Array<{ action_id: string; value: string; style?: string }> }>;
    expect(blocks.filter((b) => b.type === 'table')).toHaveLength(1);
    const actions = blocks.find((b) => b.type === 'actions')!.elements!;
    expect(actions).toHaveLength(3);
    expect(new Set(actions.map((a) => a.action_id)).size).toBe(3);
    for (const a of actions) expect(a.value.length).toBeLessThanOrEqual(SLACK_LIMITS.buttonValue);
    expect(actions.map((a) => a.style)).toEqual(['primary', undefined, undefined]);
    expect(JSON.stringify(blocks)).toContain(comparison.verdict.reason.slice(0, 40));
    expect(blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocksPerMessage);
  });

  it('keeps the table within 100 rows and 20 columns with hundreds of categories', () => {
    const comparison = compareRuns({ before: outcomes(3000, (i) => i % 3 === 0, 500), after: outcomes(3000, (i) => i % 2 === 0, 500) });
    const rows = comparisonRows(comparison);
    expect(rows.length).toBe(SLACK_LIMITS.tableRows);
    expect(rows.every((r) => r.length <= SLACK_LIMITS.tableColumns)).toBe(true);
    expect(rows.at(-1)![0]!.text).toMatch(/^\+\d+ more categories$/);
  });

  it('offers a held-out retrain first when generalization was not measured', () => {
    const before = outcomes(100, (i) => i % 2 === 0);
    const after = outcomes(100, () => true);
    const failed = before.filter((q) => !q.correct).map((q) => q.questionId);
    const comparison = compareRuns({ before, after, trainedOn: failed });
    expect(comparison.training!.generalizationMeasured).toBe(false);
    expect(comparison.verdict.outcome).not.toBe('improved');
    const steps = nextStepsFor(comparison, refs);
    expect(steps[0]!.label).toBe('Retrain with 30% held out');
    expect(steps[0]!.action).toMatchObject({ action: 'train_on_failures', runId: 'r1', heldOutFraction: 0.3 });
  });

  it('suggests keeping the trained model when it improved', () => {
    const comparison = compareRuns({ before: outcomes(400, (i) => i % 2 === 0), after: outcomes(400, (i) => i % 4 !== 3) });
    expect(comparison.verdict.outcome).toBe('improved');
    expect(nextStepsFor(comparison, refs)[0]!.label).toBe('Keep the trained model');
  });

  it('sums the cost of every step, estimated against charged, and the agent per turn', () => {
    const text = costSummary(view(compareRuns({ before: outcomes(4, () => true), after: outcomes(4, () => true) })).cost.costs, 0.0325, 95_000, [0.01, 0.0225]);
    expect(text).toContain('*Total:* 8.50 credits + $0.0325 agent · elapsed 1m 35s');
    expect(text).toContain('training t1 4.50 cr (est. 4.11)');
    expect(text).toContain('baseline run r1 4.00 cr ·');
    expect(text).toContain('agent $0.0325 (2 turns: $0.0100 + $0.0225)');
  });
});

type Table = { type: 'table'; rows: Array<Array<{ text: string }>> };
type Section = { type: string; text?: { text: string }; elements?: Array<{ text: string }> };

function rendered(comparison: ReturnType<typeof compareRuns>) {
  const blocks = buildComparisonBlocks(view(comparison)) as Array<Section | Table>;
  const table = blocks.find((b): b is Table => b.type === 'table')!;
  const row = (label: string) => table.rows.find((r) => r[0]!.text.startsWith(label))?.map((c) => c.text);
  const verdictLine = (blocks[1] as Section).text!.text.split('\n')[0]!;
  const notes = blocks.filter((b): b is Section => b.type === 'context').map((b) => b.elements![0]!.text);
  return { blocks, table, row, verdictLine, notes };
}

/** The memorization-only loop of the issue: 59 right before, 41 failed and all trained on, 35 of them fixed, 3 others broke. */
function memorizationOnly() {
  const before = outcomes(100, (i) => i < 59);
  const after = outcomes(100, (i) => (i < 59 ? i >= 3 : i < 59 + 35));
  const trainedOn = before.filter((q) => !q.correct).map((q) => q.questionId);
  return compareRuns({ before, after, trainedOn });
}

describe('the verdict headline and the table agree', () => {
  it('headlines memorization-only training as memorized, with what was measured, never "no detectable change"', () => {
    const comparison = memorizationOnly();
    const { verdictLine, row, blocks } = rendered(comparison);
    expect(verdictLine).toBe('*:brain: Memorized: 35 of 41 trained questions now right; generalization not measured*');
    expect(JSON.stringify(blocks)).not.toMatch(/no detectable change/i);
    // The table shows the same: 35 of 41 is the trained row's after accuracy, and the overall gain is significant.
    expect(row('Trained on')![0]).toBe('Trained on (memorization check) (41)');
    expect(row('Trained on')![2]).toMatch(/^85\.4% /);
    expect(row('McNemar')![3]).toBe('< 0.0001');
    expect(nextStepsFor(comparison, refs)[0]!.label).toBe('Retrain with 30% held out');
  });

  it('says under the table that the questions not trained on, all right before, only check forgetting', () => {
    const { row, notes, table } = rendered(memorizationOnly());
    expect(row('Not trained on')![0]).toBe('Not trained on, all right before (forgetting check) (59)');
    expect(notes).toContain(
      'The 59 questions not trained on were all right before, so they can only stay right or break: that row is a forgetting check and cannot show whether training helps on questions it did not see.',
    );
    expect(table.rows.some((r) => r[0]!.text === 'Not trained on (59)')).toBe(false);
  });

  it('keeps the plain "Not trained on" label when some failed questions were left out of training', () => {
    const before = outcomes(100, (i) => i < 60);
    const after = outcomes(100, (i) => i < 60 || i >= 70);
    const trainedOn = before.filter((q, i) => !q.correct && i >= 80).map((q) => q.questionId);
    const comparison = compareRuns({ before, after, trainedOn });
    const { row, notes, verdictLine } = rendered(comparison);
    expect(row('Not trained on (80)')).toBeDefined();
    expect(notes.some((n) => n.includes('forgetting check'))).toBe(false);
    // The headline's figure is the table's weighted row.
    const weighted = row('Not trained on, weighted to all')![3]!;
    expect(verdictLine).toContain(weighted.replace(' pts (', ' pts on the questions not trained on, weighted to all (95% CI '));
  });

  it('shows the Wilson interval of each accuracy, before and after, and the headline quotes the table', () => {
    const before = outcomes(100, (i) => i % 10 < 6);
    const after = outcomes(100, (i) => i % 10 < 8);
    const comparison = compareRuns({ before, after });
    const { table, row, verdictLine } = rendered(comparison);
    expect(table.rows[0]!.map((c) => c.text)).toEqual(['Questions', 'Before (95% CI)', 'After (95% CI)', 'Change (95% CI)']);
    const w = (count: number) => wilsonInterval(count, 100);
    const pct = (x: number) => (x * 100).toFixed(1);
    const all = row('All questions')!;
    expect(all[1]).toBe(`60.0% (${pct(w(60).lower)}–${pct(w(60).upper)})`);
    expect(all[2]).toBe(`80.0% (${pct(w(80).lower)}–${pct(w(80).upper)})`);
    for (const label of ['Category: c0', 'Category: c1']) expect(row(label)![1]).toMatch(/^\d+\.\d% \(\d+\.\d–\d+\.\d\)$/);
    expect(verdictLine).toBe(`*:white_check_mark: Improved: accuracy 60.0% → 80.0% (${all[3]!.replace(' pts (', ' pts, 95% CI ')}*`);
  });

  it('keeps the intervals within Slack\'s limits with hundreds of categories and a long trained split', () => {
    const before = outcomes(3000, (i) => i % 3 === 0, 500);
    const after = outcomes(3000, (i) => i % 2 === 0, 500);
    const trainedOn = before.filter((q) => !q.correct).map((q) => q.questionId);
    const blocks = posted(compareRuns({ before, after, trainedOn }));
    expect(validateBlocks(blocks, 'message')).toEqual([]);
  });

  it('shows the mean score a graded verdict is decided on', () => {
    const before = Array.from({ length: 60 }, (_, i) => ({ questionId: `g${i}`, category: 'any', score: 0.4 }));
    const after = before.map((q, i) => ({ ...q, score: i % 3 === 0 ? 0.4 : 0.7 }));
    const comparison = compareRuns({ before, after, scoring: 'graded', bootstrap: { resamples: 500 } });
    const { row, verdictLine } = rendered(comparison);
    const mean = row('Mean score, all questions')!;
    expect(mean.slice(1, 3)).toEqual(['40.0%', '60.0%']);
    expect(verdictLine).toContain('mean score 40.0% → 60.0%');
    expect(row('Full marks, all questions')).toBeDefined();
  });
});
