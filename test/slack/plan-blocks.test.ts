// The plan message's blocks: one plan block of task cards Slack accepts, and the same plan as text.
import { describe, expect, it } from 'vitest';
import type { PlanView } from '../../src/agent/plan-progress.js';
import { buildPlanMessage } from '../../src/slack/blocks/plan.js';
import { SLACK_LIMITS } from '../../src/slack/limits.js';
import { validateBlocks } from '../kit/fakes/slack/index.js';

const view: PlanView = {
  title: 'The plan: 1 of 5 steps done',
  running: true,
  settled: false,
  steps: [
    { id: 'baseline_run', title: 'Benchmark 104 on qwen', status: 'complete', detail: 'score 59.0%', url: 'http://p/runs/run_1' },
    { id: 'dataset', title: 'Build a training set', status: 'in_progress', detail: 'building' },
    { id: 'training', title: 'Train', status: 'in_progress', detail: '42% trained', estimatedFinishAt: '2026-12-05T08:10:30.000Z' },
    { id: 'trained_run', title: 'Benchmark again', status: 'pending' },
    { id: 'verdict', title: 'Verdict', status: 'error', detail: 'failed' },
  ],
};

describe('buildPlanMessage', () => {
  it('draws one plan block with a task card per step, Slack statuses, details as rich text and the estimated finish as a date', () => {
    const message = buildPlanMessage(view, 'U1');
    expect(validateBlocks(message.blocks, 'message')).toEqual([]);
    expect(message.blocks).toHaveLength(1);
    const plan = message.blocks[0] as unknown as { type: string; title: string; block_id?: string; tasks: Array<Record<string, unknown>> };
    expect(plan).toMatchObject({ type: 'plan', title: 'The plan: 1 of 5 steps done' });
    expect(plan.block_id).toBeUndefined();
    expect(plan.tasks.map((t) => [t.type, t.task_id, t.status])).toEqual([
      ['task_card', 'baseline_run', 'complete'],
      ['task_card', 'dataset', 'in_progress'],
      ['task_card', 'training', 'in_progress'],
      ['task_card', 'trained_run', 'pending'],
      ['task_card', 'verdict', 'error'],
    ]);
    expect(plan.tasks[0]!.sources).toEqual([{ type: 'url', url: 'http://p/runs/run_1', text: 'Open on the platform' }]);
    expect(plan.tasks[3]!.details).toBeUndefined();
    expect(plan.tasks[2]!.details).toEqual({
      type: 'rich_text',
      elements: [
        {
          type: 'rich_text_section',
          elements: [
            { type: 'text', text: '42% trained' },
            { type: 'text', text: ' · estimated finish ' },
            { type: 'date', timestamp: Date.parse('2026-12-05T08:10:30.000Z') / 1000, format: '{time}', fallback: '08:10 UTC' },
          ],
        },
      ],
    });
  });

  it('gives the same plan as text, mentioning the person, for notifications and for when Slack refuses the blocks', () => {
    const { text } = buildPlanMessage(view, 'U1');
    expect(text.split('\n')).toEqual([
      '<@U1> The plan: 1 of 5 steps done',
      ':white_check_mark: 1. Benchmark 104 on qwen (complete: score 59.0%)',
      ':hourglass_flowing_sand: 2. Build a training set (in progress: building)',
      ':hourglass_flowing_sand: 3. Train (in progress: 42% trained · estimated finish 08:10 UTC)',
      ':white_circle: 4. Benchmark again (pending)',
      ':x: 5. Verdict (error: failed)',
    ]);
  });

  it('keeps long titles within the limits instead of failing', () => {
    const long = { ...view, title: 'T'.repeat(500), steps: view.steps.map((s) => ({ ...s, title: 'x'.repeat(1000), detail: 'd'.repeat(5000) })) };
    const message = buildPlanMessage(long, 'U1');
    const plan = message.blocks[0] as unknown as { title: string; tasks: Array<{ title: string }> };
    expect(plan.title.length).toBe(SLACK_LIMITS.planTitle);
    for (const task of plan.tasks) expect(task.title.length).toBe(SLACK_LIMITS.taskTitle);
    expect(message.text.length).toBeLessThanOrEqual(SLACK_LIMITS.fallbackText);
    expect(validateBlocks(message.blocks, 'message')).toEqual([]);
  });

  it('shows text from elsewhere literally in the fallback, and links only http(s) addresses', () => {
    const hostile: PlanView = {
      ...view,
      steps: [{ id: 'baseline_run', title: 'Benchmark <!channel> on <@U999>', status: 'error', detail: 'failed: a & b > c', url: 'javascript:alert(1)' }],
    };
    const message = buildPlanMessage(hostile, 'U1');
    expect(message.text).toContain('Benchmark &lt;!channel&gt; on &lt;@U999&gt; (error: failed: a &amp; b &gt; c)');
    expect(message.text).not.toContain('<!channel>');
    const plan = message.blocks[0] as unknown as { tasks: Array<{ sources?: unknown }> };
    expect(plan.tasks[0]!.sources).toBeUndefined();
  });
});
