// End to end: the plan, live. One message in, the whole loop, and the thread's plan message rewritten
// as the steps move: its states in order, each step's status never going back, progress inside the
// running steps, every write within chat.update's pace, and a plain fallback when Slack refuses it.
import { afterEach, describe, expect, it } from 'vitest';
import { slackPace } from '../../src/slack/limits.js';
import type { PlanState } from '../kit/fakes/slack/index.js';
import { startHarness, waitForVerdict, type Harness } from '../kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';
import { waitUntil } from '../kit/wait.js';

const OWNER = 'UOWNER';
const STEP_IDS = ['baseline_run', 'dataset', 'training', 'trained_run', 'verdict'];
const RANK: Record<string, number> = { pending: 0, in_progress: 1, complete: 2 };
/** Slower than the default sandbox (a run takes about 3 s, a training about 8 s) so the steps are seen running. */
const ENV = { SANDBOX_TIME_SCALE: '0.05' };
/** Slack at twice its pace (a rewrite every 1.5 s): faster than Slack's, slow enough that "at once" stays well apart from "paced". */
const PACE_SCALE = 0.5;
const PACE = slackPace(PACE_SCALE);

async function startLoop(mode: 'inprocess' | 'process' = 'inprocess'): Promise<{ h: Harness; threadTs: string }> {
  const h = await startHarness({ script: loopScript(), env: ENV, mode, slackOptions: { paceScale: PACE_SCALE } });
  const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
  expect(mention.status).toBe(200);
  return { h, threadTs: mention.ts };
}

/** The last state once the plan message shows the loop done (the verdict turn's write may wait for the pace). */
function waitForPlanDone(h: Harness, threadTs: string, done: (s: PlanState) => boolean): Promise<PlanState[]> {
  return waitUntil(
    () => {
      const states = h.planMessages(threadTs);
      return states.length > 0 && done(states.at(-1)!) ? states : undefined;
    },
    30_000,
    'the plan message to show every step complete',
    100,
  );
}

/** Writes of one message are at least the pace apart; the fake's clock and the bot's database clock are one machine's. */
function expectPaced(states: readonly PlanState[]): void {
  for (let i = 1; i < states.length; i += 1) {
    expect(states[i]!.at - states[i - 1]!.at, `write ${i} came too soon after write ${i - 1}`).toBeGreaterThanOrEqual(PACE.planUpdateIntervalMs - 100);
  }
}

describe('the plan, live', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('posts one plan message after the launch report and rewrites it as the loop runs, step by step, within the pace', async () => {
    const loop = await startLoop();
    h = loop.h;
    await waitForVerdict(h, loop.threadTs);
    const states = await waitForPlanDone(h, loop.threadTs, (s) => s.tasks.length === 5 && s.tasks.every((t) => t.status === 'complete'));

    // One message: posted once, then only updated, in the thread.
    expect(states[0]!.method).toBe('chat.postMessage');
    expect(states.slice(1).every((s) => s.method === 'chat.update')).toBe(true);
    expect(new Set(states.map((s) => s.ts)).size).toBe(1);
    expect(states.every((s) => s.threadTs === loop.threadTs)).toBe(true);

    // The step reports are unchanged: four, each mentioning the person; the plan is not one of them
    // and comes after the launch report.
    const posts = h.posts(loop.threadTs);
    expect(posts).toHaveLength(4);
    for (const post of posts) expect(post.text).toContain(`<@${OWNER}>`);
    expect(Number(states[0]!.ts)).toBeGreaterThan(Number(posts[0]!.ts));
    expect(states.every((s) => s.text.startsWith(`<@${OWNER}>`))).toBe(true);

    // Every state draws the five steps in order, with Slack's task statuses only.
    for (const state of states) {
      expect(state.title).toBeDefined();
      expect(state.tasks.map((t) => t.taskId)).toEqual(STEP_IDS);
      for (const task of state.tasks) expect(Object.keys(RANK)).toContain(task.status);
    }
    // The first state: the baseline was just launched (or, on a slow machine, already finished); nothing after it started.
    const first = states[0]!;
    expect(['in_progress', 'complete']).toContain(first.tasks[0]!.status);
    expect(first.tasks.slice(2).map((t) => t.status)).toEqual(['pending', 'pending', 'pending']);
    // No step ever goes back; the steps finish in order.
    for (let i = 1; i < states.length; i += 1) {
      states[i]!.tasks.forEach((task, j) => {
        expect(RANK[task.status]!, `step ${task.taskId} in state ${i}`).toBeGreaterThanOrEqual(RANK[states[i - 1]!.tasks[j]!.status]!);
      });
    }
    for (const state of states) {
      const ranks = state.tasks.map((t) => RANK[t.status]!);
      expect([...ranks].sort((a, b) => b - a), 'a later step ahead of an earlier one').toEqual(ranks);
    }
    // The message changed as the steps moved: more states than the first and the last, each different.
    expect(states.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < states.length; i += 1) expect(JSON.stringify(states[i]!.tasks)).not.toBe(JSON.stringify(states[i - 1]!.tasks));

    // A running step shows its progress from the platform, and its estimated finish.
    const running = states.flatMap((s) => s.tasks.filter((t) => t.status === 'in_progress' && (t.taskId === 'baseline_run' || t.taskId === 'training' || t.taskId === 'trained_run')));
    expect(running.length).toBeGreaterThan(0);
    for (const task of running) {
      expect(task.detail).toMatch(task.taskId === 'training' ? /^(\d+% trained|queued on the platform|training)/ : /^(\d+ of 100 questions scored|queued on the platform|running)/);
      if (/scored|trained/.test(task.detail)) expect(task.detail).toMatch(/estimated finish \d\d:\d\d UTC$/);
      expect(task.sources[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    }
    expect(running.some((t) => /of 100 questions scored|% trained/.test(t.detail))).toBe(true);

    const last = states.at(-1)!;
    expect(last.title).toBe('The plan is done: 5 of 5 steps');
    expect(last.tasks.find((t) => t.taskId === 'verdict')!.detail).toBe('posted in this thread');

    // Paced: each write of the message at least the pace after the one before; nothing refused, no burst.
    expectPaced(states);
    const updates = h.slack.callsTo('chat.update');
    expect(updates.every((c) => c.status === 200 && (c.response as { ok: boolean }).ok)).toBe(true);
    expect(h.slack.violations).toEqual([]);

    // The plan's message and state are stored with the chat, and nothing keeps polling a settled plan.
    const row = await h.db.db.selectFrom('plan_messages').selectAll().executeTakeFirstOrThrow();
    expect(row.slack_ts).toBe(states[0]!.ts);
    expect(row.text_only).toBe(false);
    const countBefore = h.planMessages(loop.threadTs).length;
    await new Promise((resolve) => setTimeout(resolve, PACE.planUpdateIntervalMs + 1500));
    expect(h.planMessages(loop.threadTs).length).toBe(countBefore);
  }, 120_000);

  it('honours Retry-After and keeps the plan as text when Slack refuses its blocks', async () => {
    const loop = await startLoop();
    h = loop.h;
    // The first rewrite is rate limited for 4 s; the one after is refused as invalid_blocks.
    h.slack.failNext('chat.update', 1, { status: 429, retryAfter: 4 });
    h.slack.failNext('chat.update', 1, { status: 200, error: 'invalid_blocks' });
    await waitForVerdict(h, loop.threadTs);
    const states = await waitForPlanDone(h, loop.threadTs, (s) => s.title === undefined && s.text.includes('The plan is done: 5 of 5 steps'));

    const updates = h.slack.callsTo('chat.update');
    const limited = updates.findIndex((c) => c.status === 429);
    const refused = updates.findIndex((c) => (c.response as { error?: string }).error === 'invalid_blocks');
    expect(limited).toBeGreaterThanOrEqual(0);
    expect(refused).toBe(limited + 1);
    // Nothing was sent again before the Retry-After had passed.
    expect(updates[refused]!.at - updates[limited]!.at).toBeGreaterThanOrEqual(4000 - 100);
    // The refused write was made at once as text alone (blocks cleared), and the message stays text from then on.
    const fallback = updates[refused + 1]!;
    expect(fallback.args.blocks).toEqual([]);
    expect(fallback.at - updates[refused]!.at).toBeLessThan(PACE.planUpdateIntervalMs);
    const afterRefusal = states.filter((s) => s.at >= fallback.at);
    expect(afterRefusal.length).toBeGreaterThan(0);
    for (const state of afterRefusal) {
      expect(state.title).toBeUndefined();
      expect(state.text.startsWith(`<@${OWNER}> `)).toBe(true);
      expect(state.text.split('\n')).toHaveLength(6);
    }
    expect(afterRefusal.at(-1)!.text).toMatch(/5\. Compare the two runs and give the verdict \(complete: posted in this thread\)$/);
    const row = await h.db.db.selectFrom('plan_messages').selectAll().executeTakeFirstOrThrow();
    expect(row.text_only).toBe(true);
    // The step reports are untouched by the plan's troubles.
    expect(h.posts(loop.threadTs)).toHaveLength(4);
  }, 120_000);

  it('keeps rewriting the same message after the bot is killed mid-loop and started again', async () => {
    const loop = await startLoop('process');
    h = loop.h;
    const harness = h;
    // Killed (SIGKILL) once the plan message is posted (the loop still running), then started again.
    await waitUntil(() => harness.planMessages(loop.threadTs).length > 0, 60_000, 'the plan message');
    const beforeKill = h.planMessages(loop.threadTs).length;
    await h.restart();
    await waitForVerdict(h, loop.threadTs, 90_000);
    const states = await waitForPlanDone(h, loop.threadTs, (s) => s.tasks.length === 5 && s.tasks.every((t) => t.status === 'complete'));
    expect(states.length).toBeGreaterThan(beforeKill);
    // One plan message in the thread, every state a write of it.
    expect(h.slack.messages(undefined, loop.threadTs).filter((m) => m.metadata?.event_type === 'verdict_bot_plan')).toHaveLength(1);
    expect(states.filter((s) => s.method === 'chat.postMessage')).toHaveLength(1);
    expect(new Set(states.map((s) => s.ts)).size).toBe(1);
    for (let i = 1; i < states.length; i += 1) {
      states[i]!.tasks.forEach((task, j) => expect(RANK[task.status]!).toBeGreaterThanOrEqual(RANK[states[i - 1]!.tasks[j]!.status]!));
    }
    expectPaced(states);
    expect(h.posts(loop.threadTs)).toHaveLength(4);
    expect(h.crashes).toEqual([]);
  }, 240_000);
});
