// The plan's view is derived in code from the plan, the stored events and the platform's live reads.
import { describe, expect, it } from 'vitest';
import { derivePlanView, pollIntervalMs, resourcesToWatch, type LiveResource, type StoredResource } from '../../src/agent/plan-progress.js';
import type { Plan, PlanStep } from '../../src/agent/plan.js';

function planWith(steps: Partial<Record<PlanStep['kind'], Partial<PlanStep>>>, extra: Partial<Plan> = {}): Plan {
  const kinds = ['baseline_run', 'train', 'trained_run', 'compare'] as const;
  return {
    agreedBy: 'U1',
    agreedAt: '2026-12-05T08:00:00.000Z',
    benchmarkId: '104',
    baseModelId: 'qwen/Qwen2.5-0.5B-Instruct',
    augmentation: 5,
    heldOutFraction: 0,
    steps: kinds.map((kind) => ({ kind, status: 'pending', attempt: 1, ...steps[kind] })),
    ...extra,
  };
}

const statuses = (view: ReturnType<typeof derivePlanView>) => view.steps.map((s) => `${s.id}:${s.status}`);

describe('derivePlanView', () => {
  it('shows the five steps of the loop, the running baseline with questions scored out of the total and its estimated finish', () => {
    const plan = planWith({ baseline_run: { status: 'launched', runId: 'run_1' } });
    const live = new Map<string, LiveResource>([
      ['run_1', { status: 'running', questions: { done: 37, total: 100 }, estimatedFinishAt: '2026-12-05T08:10:00.000Z', webUrl: 'http://p/runs/run_1' }],
    ]);
    const view = derivePlanView({ plan, live });
    expect(statuses(view)).toEqual(['baseline_run:in_progress', 'dataset:pending', 'training:pending', 'trained_run:pending', 'verdict:pending']);
    expect(view.steps[0]).toMatchObject({
      title: 'Benchmark 104 on qwen/Qwen2.5-0.5B-Instruct',
      detail: '37 of 100 questions scored',
      progress: { done: 37, total: 100, unit: 'questions' },
      estimatedFinishAt: '2026-12-05T08:10:00.000Z',
      url: 'http://p/runs/run_1',
    });
    expect(view).toMatchObject({ title: 'The plan: 0 of 5 steps done', running: true, settled: false });
  });

  it('shows training progress from its steps when the trainer reports them, else from its fraction', () => {
    const plan = planWith({
      baseline_run: { status: 'completed', runId: 'run_1' },
      train: { status: 'launched', datasetId: 'ds_1', trainingId: 'tr_1' },
    });
    const stored = new Map<string, StoredResource>([['run_1', { status: 'completed', score: 0.59, priceCharged: '2.5000', webUrl: 'http://p/runs/run_1' }]]);
    const bySteps = derivePlanView({ plan, stored, live: new Map([['tr_1', { status: 'running', fraction: 0.5, steps: { done: 30, total: 120 } }]]) });
    expect(statuses(bySteps).slice(0, 3)).toEqual(['baseline_run:complete', 'dataset:complete', 'training:in_progress']);
    expect(bySteps.steps[0]!.detail).toBe('score 59.0%, 2.50 credits');
    expect(bySteps.steps[0]!.url).toBe('http://p/runs/run_1');
    expect(bySteps.steps[1]!.detail).toBe('dataset ds_1');
    expect(bySteps.steps[2]).toMatchObject({ detail: '25% trained (step 30 of 120)', progress: { done: 30, total: 120, unit: 'steps' } });
    const byFraction = derivePlanView({ plan, live: new Map([['tr_1', { status: 'running', fraction: 0.426 }]]) });
    expect(byFraction.steps[2]).toMatchObject({ detail: '42% trained', progress: { done: 42, total: 100, unit: 'percent' } });
    expect(byFraction.title).toBe('The plan: 2 of 5 steps done');
  });

  it('shows a step finished as soon as the platform says so, before its turn records it', () => {
    const plan = planWith({ baseline_run: { status: 'launched', runId: 'run_1' } });
    const view = derivePlanView({ plan, live: new Map([['run_1', { status: 'completed', questions: { done: 100, total: 100 } }]]) });
    expect(view.steps[0]!.status).toBe('complete');
    expect(view.running).toBe(false);
  });

  it('building the training set is in progress once the baseline is done, and the verdict once the trained run is', () => {
    const afterBaseline = derivePlanView({ plan: planWith({ baseline_run: { status: 'completed', runId: 'run_1' } }), live: new Map() });
    expect(afterBaseline.steps[1]).toMatchObject({ status: 'in_progress', detail: 'building' });
    expect(afterBaseline.running).toBe(false);
    const afterTrainedRun = derivePlanView({
      plan: planWith(
        {
          baseline_run: { status: 'completed', runId: 'run_1' },
          train: { status: 'completed', datasetId: 'ds_1', trainingId: 'tr_1' },
          trained_run: { status: 'completed', runId: 'run_2' },
        },
        { trainedModelId: 'ft/model-1' },
      ),
      live: new Map(),
    });
    expect(statuses(afterTrainedRun)).toEqual(['baseline_run:complete', 'dataset:complete', 'training:complete', 'trained_run:complete', 'verdict:in_progress']);
    expect(afterTrainedRun.steps[3]!.title).toBe('Benchmark 104 again on ft/model-1');
  });

  it('marks a failed step as an error with its reason, and the plan as stopped', () => {
    const plan = planWith({
      baseline_run: { status: 'completed', runId: 'run_1' },
      train: { status: 'failed', datasetId: 'ds_1', trainingId: 'tr_1', error: 'out of memory' },
    });
    const view = derivePlanView({ plan, live: new Map() });
    expect(view.steps[2]).toMatchObject({ status: 'error', detail: 'out of memory' });
    expect(view.steps[3]!.status).toBe('pending');
    expect(view).toMatchObject({ title: 'The plan stopped: 2 of 5 steps done', settled: true, running: false });
    const cancelled = derivePlanView({ plan: planWith({ baseline_run: { status: 'launched', runId: 'run_1' } }), live: new Map([['run_1', { status: 'cancelled' }]]) });
    expect(cancelled.steps[0]).toMatchObject({ status: 'error', detail: 'the run cancelled' });
  });

  it('a finished plan is settled and not running', () => {
    const plan = planWith({
      baseline_run: { status: 'completed', runId: 'run_1' },
      train: { status: 'completed', datasetId: 'ds_1', trainingId: 'tr_1' },
      trained_run: { status: 'completed', runId: 'run_2' },
      compare: { status: 'completed' },
    });
    const view = derivePlanView({ plan, live: new Map() });
    expect(view.steps.every((s) => s.status === 'complete')).toBe(true);
    expect(view).toMatchObject({ title: 'The plan is done: 5 of 5 steps', settled: true, running: false });
  });

  it('watches only the launched runs and trainings', () => {
    const plan = planWith({
      baseline_run: { status: 'completed', runId: 'run_1' },
      train: { status: 'launched', datasetId: 'ds_1', trainingId: 'tr_1' },
    });
    expect(resourcesToWatch(plan)).toEqual([{ kind: 'training', id: 'tr_1' }]);
  });
});

describe('pollIntervalMs', () => {
  const running = (estimatedFinishAt?: string) =>
    derivePlanView({
      plan: planWith({ baseline_run: { status: 'launched', runId: 'run_1' } }),
      live: new Map([['run_1', { status: 'running', questions: { done: 1, total: 100 }, ...(estimatedFinishAt ? { estimatedFinishAt } : {}) }]]),
    });
  const now = Date.parse('2026-12-05T08:00:00.000Z');

  it('reads a long step about every percent of the time left, within the bounds', () => {
    expect(pollIntervalMs(running('2026-12-05T10:00:00.000Z'), now, 3000, 60_000)).toBe(60_000);
    expect(pollIntervalMs(running('2026-12-05T08:50:00.000Z'), now, 3000, 60_000)).toBe(30_000);
    expect(pollIntervalMs(running('2026-12-05T08:01:00.000Z'), now, 3000, 60_000)).toBe(3000);
    expect(pollIntervalMs(running('2026-12-05T07:59:00.000Z'), now, 3000, 60_000)).toBe(3000);
  });

  it('reads at the pace when no finish is estimated', () => {
    expect(pollIntervalMs(running(), now, 3000, 60_000)).toBe(3000);
  });
});
