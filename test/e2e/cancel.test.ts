// End to end: a run cancelled on the platform wakes the thread, which says it was cancelled and what it cost, and nothing more is launched.
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { sandboxCounts, startHarness, TEAM, type Harness } from '../kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';

const OWNER = 'UOWNER';

describe('a cancelled run in the loop', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it.each([
    { via: 'its webhook', kind: 'platform_event', webhookDrop: 0 },
    { via: 'the sweep (its webhook lost)', kind: 'reconcile', webhookDrop: 1 },
  ])('is a finished step, found by $via: the thread is told plainly, the plan stops, nothing wakes it again', async ({ kind, webhookDrop }) => {
    // A 100-question run takes 30 s here: it is still running when it is cancelled.
    h = await startHarness({
      script: loopScript(),
      env: { SANDBOX_TIME_SCALE: '0.5', RECONCILE_OVERDUE_SECONDS: '1', RECONCILE_CRON: '* * * * * *' },
      botOptions: { sandbox: { faults: { webhookDrop } } },
    });
    const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    expect(mention.status).toBe(200);
    await h.waitForPosts(mention.ts, 1, 60_000);
    const resource = await h.db.db.selectFrom('resources').selectAll().where('team_id', '=', TEAM).where('kind', '=', 'run').executeTakeFirstOrThrow();

    const sandbox = h.bot()!.sandbox!;
    const platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token });
    const cancelled = await platform.cancelRun(resource.platform_id);
    expect(cancelled.status).toBe('cancelled');

    const posts = await h.waitForPosts(mention.ts, 2, 60_000);
    expect(posts[1]!.text).toContain(`<@${OWNER}>`);
    expect(posts[1]!.text).toMatch(new RegExp(`Run ${resource.platform_id} .*: cancelled; charged ${cancelled.chargedCredits} credits`));
    const prompt = JSON.stringify(h.model.requests.at(-1)!.body.messages);
    expect(prompt).toContain('[Platform event run.cancelled');
    expect(prompt).toContain('The run was cancelled (');
    expect(prompt).toContain(`charged ${cancelled.chargedCredits} of ${cancelled.priceCredits} credits`);
    expect(prompt).not.toContain('Next step of the plan');

    const row = await h.db.db.selectFrom('resources').selectAll().where('id', '=', resource.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('cancelled');
    expect(Number(row.price_charged)).toBe(cancelled.chargedCredits);
    expect(row.notified_at).not.toBeNull();
    const chat = await h.db.db.selectFrom('chats').select('plan').where('team_id', '=', TEAM).executeTakeFirstOrThrow();
    const plan = chat.plan as { steps: Array<{ kind: string; status: string; error?: string }> };
    expect(plan.steps[0]).toMatchObject({ kind: 'baseline_run', status: 'failed' });
    expect(plan.steps[0]!.error).toMatch(/^cancelled: /);

    // The sweep runs every second: a cancelled run is finished, so nothing wakes the thread again, and nothing is launched.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const triggers = await h.db.db.selectFrom('triggers').select(['kind', 'status']).where('team_id', '=', TEAM).orderBy('id').execute();
    expect(triggers).toEqual([
      { kind: 'mention', status: 'done' },
      { kind, status: 'done' },
    ]);
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 1, trainings: 0, datasets: 0 });
    expect(h.posts(mention.ts)).toHaveLength(2);
  }, 120_000);
});
