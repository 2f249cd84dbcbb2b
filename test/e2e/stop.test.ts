// End to end: Slack's Stop button on the thread's agent session cancels the run or training on the
// platform, launches nothing after, says in the thread what was stopped and what it cost, and is
// recorded in the Activity log; only the thread's owner or an admin can stop.
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { sendEvent } from '../kit/fakes/slack/index.js';
import { CHANNEL, sandboxCounts, startHarness, TEAM, type Harness } from '../kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';
import { waitUntil } from '../kit/wait.js';

const OWNER = 'UOWNER';
const OTHER = 'UOTHER';
const ADMIN = 'UADMIN';

async function press(h: Harness, threadTs: string, user: string) {
  const event = h.slack.pressStop({ channel: CHANNEL, threadTs, user });
  return event;
}

async function deliver(h: Harness, event: Record<string, unknown> & { type: string }) {
  const delivery = await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, event, { teamId: TEAM });
  expect(delivery.status).toBe(200);
  return delivery;
}

const waitForStatus = (h: Harness, threadTs: string, status: string) =>
  waitUntil(() => h.slack.session(CHANNEL, threadTs)?.status === status, 30_000, `the agent session of ${threadTs} to be ${status}`);

const triggersOf = (h: Harness) =>
  h.db.db.selectFrom('triggers').select(['kind', 'status', 'error', 'user_id']).where('team_id', '=', TEAM).orderBy('id').execute();

describe('Stop on the agent session', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('during a run: a non-owner is refused; the owner stops it once (two clicks), the run is cancelled, nothing launched after', async () => {
    // A 100-question run takes 30 s here: it is still running when Stop is pressed.
    h = await startHarness({ script: loopScript(), env: { SANDBOX_TIME_SCALE: '0.5' } });
    const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    expect(mention.status).toBe(200);
    await h.waitForPosts(mention.ts, 1, 60_000);
    const resource = await h.db.db.selectFrom('resources').selectAll().where('team_id', '=', TEAM).where('kind', '=', 'run').executeTakeFirstOrThrow();
    // The run works on the platform: the session stays processing, so Slack shows Stop.
    await waitForStatus(h, mention.ts, 'processing');
    const sandbox = h.bot()!.sandbox!;
    const platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token });

    // Someone else presses Stop: told why, only them; nothing is stopped.
    await deliver(h, await press(h, mention.ts, OTHER));
    const refusal = await waitUntil(() => h!.slack.ephemerals.find((e) => e.user === OTHER), 30_000, 'the ephemeral refusal');
    expect(refusal.text).toContain(`Only <@${OWNER}>, who started this thread, or an admin can stop it`);
    await waitUntil(async () => (await triggersOf(h!)).find((t) => t.kind === 'stop' && t.status === 'done'), 30_000, 'the refused stop trigger');
    expect((await platform.getRun(resource.platform_id)).status).not.toBe('cancelled');
    const afterRefusal = await h.db.db.selectFrom('chats').select(['stopped_at']).where('team_id', '=', TEAM).executeTakeFirstOrThrow();
    expect(afterRefusal.stopped_at).toBeNull();
    expect(h.posts(mention.ts)).toHaveLength(1);

    // The owner clicks Stop twice in a row: one stop.
    const first = await press(h, mention.ts, OWNER);
    const second = await press(h, mention.ts, OWNER);
    await Promise.all([deliver(h, first), deliver(h, second)]);
    const posts = await h.waitForPosts(mention.ts, 2, 60_000);
    const stopPost = posts[1]!;
    const run = await platform.getRun(resource.platform_id);
    expect(run.status).toBe('cancelled');
    expect(stopPost.text).toContain(`<@${OWNER}>`);
    expect(stopPost.text).toContain('*Stopped.* You pressed Stop: nothing more will be launched in this thread.');
    expect(stopPost.text).toContain(`Run ${resource.platform_id}: cancelled (${run.progress!.done} of ${run.progress!.total} questions answered, charged ${run.chargedCredits} of ${run.priceCredits} credits)`);
    expect(stopPost.text).toMatch(/3 steps of the plan will not run/);
    expect(stopPost.text).toMatch(new RegExp(`This thread cost ${run.chargedCredits} credits on the platform and \\$\\d+\\.\\d{4} of agent time`));
    // Written by code: no model call carried the stop.
    expect(JSON.stringify(h.model.requests.map((r) => r.body.messages))).not.toContain("pressed Slack's Stop button");

    const activity = await h.db.db.selectFrom('activity').selectAll().where('team_id', '=', TEAM).where('trigger_kind', '=', 'stop').execute();
    expect(activity).toHaveLength(1);
    expect(activity[0]!.trigger_label).toBe('Stop');
    expect(activity[0]!.summary).toBe(`Stopped by <@${OWNER}>: cancelled run ${resource.platform_id}`);

    const chat = await h.db.db.selectFrom('chats').selectAll().where('team_id', '=', TEAM).executeTakeFirstOrThrow();
    expect(chat.stopped_by).toBe(OWNER);
    const plan = chat.plan as { steps: Array<{ kind: string; status: string; error?: string }> };
    expect(plan.steps.map((s) => s.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
    const row = await h.db.db.selectFrom('resources').selectAll().where('id', '=', resource.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('cancelled');
    expect(Number(row.price_charged)).toBe(run.chargedCredits);

    // The run's cancelled webhook arrives and is recorded without a turn; the session is closed.
    await waitForStatus(h, mention.ts, 'closed');
    const triggers = await waitUntil(async () => {
      const all = await triggersOf(h!);
      return all.some((t) => t.kind === 'platform_event' && t.status === 'done') ? all : undefined;
    }, 60_000, 'the run.cancelled webhook');
    const stops = triggers.filter((t) => t.kind === 'stop');
    expect(stops.map((t) => [t.user_id, t.status])).toEqual([[OTHER, 'done'], [OWNER, 'done'], [OWNER, 'done']]);
    // The two clicks arrive together, in either order: one carries the stop out, the other finds it done.
    expect(stops[0]!.error).toBe('refused');
    expect(stops.slice(1).map((t) => t.error ?? 'carried out').sort()).toEqual(['carried out', expect.stringMatching(/^the thread was already stopped by UOWNER/)]);
    expect(triggers.find((t) => t.kind === 'platform_event')!.error).toMatch(/the thread was stopped; recorded without a turn/);
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 1, trainings: 0, datasets: 0 });
    expect(h.posts(mention.ts)).toHaveLength(2);

    // "Mention me to start again": another person's reply leaves the thread stopped, the owner's reopens it.
    await h.reply({ user: OTHER, text: 'what happened?', threadTs: mention.ts });
    await h.waitForPosts(mention.ts, 3, 60_000);
    expect((await h.db.db.selectFrom('chats').select('stopped_at').where('team_id', '=', TEAM).executeTakeFirstOrThrow()).stopped_at).not.toBeNull();
    await h.reply({ user: OWNER, text: 'ok, thanks', threadTs: mention.ts });
    await h.waitForPosts(mention.ts, 4, 60_000);
    const reopened = await h.db.db.selectFrom('chats').select(['stopped_at', 'stopped_by']).where('team_id', '=', TEAM).executeTakeFirstOrThrow();
    expect(reopened).toEqual({ stopped_at: null, stopped_by: null });
    expect(h.slack.violations).toEqual([]);
  }, 180_000);

  it('during a training: an admin stops it, the training is cancelled, no trained run follows', async () => {
    // Scale 0.1: the baseline run takes about 6 s, the training at least 15 s.
    h = await startHarness({ script: loopScript(), env: { SANDBOX_TIME_SCALE: '0.1', ADMIN_USER_IDS: ADMIN } });
    const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    expect(mention.status).toBe(200);
    const training = await waitUntil(
      () => h!.db.db.selectFrom('resources').selectAll().where('team_id', '=', TEAM).where('kind', '=', 'training').executeTakeFirst(),
      120_000,
      'the training launch',
    );
    // The turn that launched the training (the second post) has posted and left the session processing.
    await h.waitForPosts(mention.ts, 2, 60_000);
    await waitForStatus(h, mention.ts, 'processing');
    const before = h.posts(mention.ts).length;
    await deliver(h, await press(h, mention.ts, ADMIN));
    const posts = await h.waitForPosts(mention.ts, before + 1, 60_000);
    const stopPost = posts.at(-1)!;
    const sandbox = h.bot()!.sandbox!;
    const platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token });
    const job = await platform.getTraining(training.platform_id);
    expect(job.status).toBe('cancelled');
    expect(stopPost.text).toContain(`<@${OWNER}>`);
    expect(stopPost.text).toContain('*Stopped.* An admin pressed Stop: nothing more will be launched in this thread.');
    expect(stopPost.text).toContain(
      `Training ${training.platform_id}: cancelled (${Math.round(job.progress * 100)}% trained, charged ${job.priceChargedCredits ?? 0} of ${job.priceEstimatedCredits} credits)`,
    );
    const activity = await h.db.db.selectFrom('activity').selectAll().where('team_id', '=', TEAM).where('trigger_kind', '=', 'stop').executeTakeFirstOrThrow();
    expect(activity.summary).toBe(`Stopped by <@${ADMIN}>: cancelled training ${training.platform_id}`);

    await waitForStatus(h, mention.ts, 'closed');
    await waitUntil(async () => {
      const all = await triggersOf(h!);
      return all.filter((t) => t.kind === 'platform_event').length >= 2 && all.every((t) => t.status === 'done');
    }, 60_000, 'the training.cancelled webhook');
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 1, trainings: 1, datasets: 1 });
    expect(h.posts(mention.ts)).toHaveLength(before + 1);
    expect(h.slack.violations).toEqual([]);
  }, 240_000);
});
