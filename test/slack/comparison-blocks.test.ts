import { describe, expect, it } from 'vitest';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import { buildComparisonBlocks, comparisonRows, costSummary, nextStepsFor } from '../../src/slack/blocks/comparison.js';
import { SLACK_LIMITS } from '../../src/slack/limits.js';

function outcomes(n: number, correct: (i: number) => boolean, categories = 4): QuestionOutcome[] {
  return Array.from({ length: n }, (_, i) => ({ questionId: `q${String(i).padStart(5, '0')}`, category: `c${i % categories}`, correct: correct(i) }));
}

const refs = { benchmarkId: '104', baseModelId: 'base', trainedModelId: 'ft', beforeRunId: 'r1', afterRunId: 'r2', augmentation: 5 };

function view(comparison: ReturnType<typeof compareRuns>) {
  return {
    comparison,
    before: { runId: 'r1', modelId: 'base' },
    after: { runId: 'r2', modelId: 'ft' },
    costs: [
      { label: 'baseline run r1', credits: 4, charged: true, estimated: 4 },
      { label: 'training t1', credits: 4.5, charged: true, estimated: 4.11 },
    ],
    agentUsd: 0.0325,
    agentTurnsUsd: [0.01, 0.0225],
    elapsedMs: 95_000,
    nextSteps: nextStepsFor(comparison, refs),
  };
}

describe('comparison blocks', () => {
  it('shows the table, the verdict and three buttons with unique action ids', () => {
    const before = outcomes(100, (i) => i % 10 < 6);
    const after = outcomes(100, (i) => i % 10 < 8);
    const comparison = compareRuns({ before, after });
    const blocks = buildComparisonBlocks(view(comparison)) as Array<{ type: string; rows?: unknown[][]; elements?: Array<{ action_id: string; value: string }> }>;
    expect(blocks.filter((b) => b.type === 'table')).toHaveLength(1);
    const actions = blocks.find((b) => b.type === 'actions')!.elements!;
    expect(actions).toHaveLength(3);
    expect(new Set(actions.map((a) => a.action_id)).size).toBe(3);
    for (const a of actions) expect(a.value.length).toBeLessThanOrEqual(SLACK_LIMITS.buttonValue);
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
    const text = costSummary(view(compareRuns({ before: outcomes(4, () => true), after: outcomes(4, () => true) })).costs, 0.0325, 95_000, [0.01, 0.0225]);
    expect(text).toContain('*Total:* 8.50 credits + $0.0325 agent · elapsed 1m 35s');
    expect(text).toContain('training t1 4.50 cr (est. 4.11)');
    expect(text).toContain('baseline run r1 4.00 cr ·');
    expect(text).toContain('agent $0.0325 (2 turns: $0.0100 + $0.0225)');
  });
});
