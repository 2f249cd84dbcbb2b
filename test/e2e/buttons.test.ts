// End to end: a button acts once. Concurrent and repeated clicks on every kind of button, tampered,
// cross-thread and replayed values, the keep-model decision, the final cost, the spending cap.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { formatUsd } from '../../src/slack/blocks/app-home.js';
import { type FakeMessage, sendBlockAction } from '../kit/fakes/slack/index.js';
import { CHANNEL, sandboxCounts, startHarness, TEAM, type Harness } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';

const OWNER = 'UOWNER';
const RUN_104 = '<@UBOT> Run benchmark 104 on Qwen2.5-0.5B-Instruct';

interface Button {
  action_id: string;
  value: string;
  text: { text: string };
}

function buttonsOf(post: FakeMessage): Button[] {
  return (post.blocks as Array<{ type: string; elements?: Button[] }> | undefined ?? []).flatMap((b) => (b.type === 'actions' ? (b.elements ?? []) : []));
}

function click(h: Harness, post: FakeMessage, threadTs: string, button: { action_id: string; value: string }, user = OWNER) {
  return sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
    user,
    teamId: TEAM,
    channel: CHANNEL,
    messageTs: post.ts,
    threadTs,
    actionId: button.action_id,
    value: button.value,
  });
}

/** Five clicks at once on the same button (a double click, a second tab, a colleague). */
async function clickFive(h: Harness, post: FakeMessage, threadTs: string, button: Button, users = [OWNER, OWNER, OWNER, OWNER, OWNER]) {
  const deliveries = await Promise.all(users.map((user) => click(h, post, threadTs, button, user)));
  for (const d of deliveries) expect(d.status).toBe(200);
}

const ephemeralsTo = (h: Harness, user: string, pattern: RegExp) => h.slack.ephemerals.filter((e) => e.user === user && pattern.test(e.text));

/** Waits for the four clicks that lost to be answered "already done"; says what happened if not. */
async function expectFourRefusals(h: Harness) {
  try {
    await waitUntil(() => (ephemeralsTo(h, OWNER, /^Already done by <@UOWNER>/).length === 4 ? true : undefined), 45_000, 'four refusals');
  } catch (error) {
    const decided = (await h.logs()).split('\n').filter((l) => l.includes('button click decided') || l.includes('button_feedback'));
    throw new Error(`${(error as Error).message}; ephemerals: ${JSON.stringify(h.slack.ephemerals.map((e) => e.text))}; log: ${decided.join('\n')}`);
  }
}

/** The message as it stands in Slack now: updated to say who chose, without the used buttons. */
async function expectRetired(h: Harness, post: FakeMessage, threadTs: string, label: string) {
  const current = await waitUntil(
    () => h.slack.messages(CHANNEL, threadTs).find((m) => m.ts === post.ts && m.updates > 0),
    20_000,
    'the message updated after the click',
  );
  const after = JSON.stringify(current.blocks);
  expect(after).toContain(`<@${OWNER}> chose *${label}*`);
  expect(after).toContain('<!date^');
  expect(buttonsOf(current).find((b) => b.text.text === label)).toBeUndefined();
}

/** A click long after the first: shifts the recorded choice back three hours, then clicks again. */
async function clickHoursLater(h: Harness, post: FakeMessage, threadTs: string, button: Button) {
  await sql`update button_choices set claimed_at = claimed_at - interval '3 hours' where claimed_at is not null`.execute(h.db.db);
  const before = h.slack.ephemerals.length;
  expect((await click(h, post, threadTs, button)).status).toBe(200);
  await waitUntil(() => (h.slack.ephemerals.length > before ? true : undefined), 20_000, 'the answer to the late click');
  expect(h.slack.ephemerals.at(-1)!.text).toMatch(/^Already done by <@UOWNER>/);
}

async function buttonTriggers(h: Harness) {
  return h.db.db.selectFrom('triggers').selectAll().where('team_id', '=', TEAM).where('kind', '=', 'button').execute();
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 1500));

describe('a button acts once', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('next step: five concurrent clicks and one hours later train once, charge once, and retire the button', async () => {
    h = await startHarness({ script: loopScript() });
    const mention = await h.mention({ user: OWNER, text: RUN_104 });
    const report = (await h.waitForPosts(mention.ts, 2, 60_000))[1]!;
    const train = buttonsOf(report).find((b) => b.text.text.startsWith('Train on failures'))!;
    expect(train).toBeDefined();

    await clickFive(h, report, mention.ts, train);
    await waitUntil(async () => ((await sandboxCounts(h!.db.db)).trainings === 1 ? true : undefined), 30_000, 'the training');
    await expectFourRefusals(h);
    await expectRetired(h, report, mention.ts, train.text.text);
    await clickHoursLater(h, report, mention.ts, train);
    await settle();
    expect(await sandboxCounts(h.db.db)).toMatchObject({ runs: 1, datasets: 1, trainings: 1 });
    expect(await buttonTriggers(h)).toHaveLength(1);
    const charged = await sql<{ n: string }>`select count(*) as n from resources where kind = 'training'`.execute(h.db.db);
    expect(Number(charged.rows[0]!.n)).toBe(1);
  }, 120_000);

  it('approve: five concurrent clicks launch once; tampered, cross-thread and replayed values launch nothing', async () => {
    h = await startHarness({ script: loopScript(), env: { SPEND_CONFIRM_THRESHOLD: '3' } });
    const a = await h.mention({ user: OWNER, text: RUN_104 });
    const b = await h.mention({ user: OWNER, text: '<@UBOT> Run benchmark 104 on Qwen2.5-1.5B-Instruct' });
    const [postA] = await h.waitForPosts(a.ts, 1, 60_000);
    const [postB] = await h.waitForPosts(b.ts, 1, 60_000);
    const approveA = buttonsOf(postA!).find((x) => x.action_id === ACTION_IDS.approve)!;
    const approveB = buttonsOf(postB!).find((x) => x.action_id === ACTION_IDS.approve)!;
    expect(approveA.text.text).toMatch(/Approve [\d.]+ credits/);

    // Tampered: another credit amount, another launch, another action; and thread B's value sent on A's message.
    const grant = JSON.parse(approveA.value) as { intent: Record<string, unknown>; credits: number };
    const forged = [
      { action_id: ACTION_IDS.approve, value: JSON.stringify({ ...grant, credits: 2000 }) },
      { action_id: ACTION_IDS.approve, value: JSON.stringify({ ...grant, intent: { ...grant.intent, benchmarkId: '205' } }) },
      { action_id: ACTION_IDS.nextStep, value: JSON.stringify({ kind: 'next', action: { action: 'run_benchmark', benchmarkId: '104', modelId: 'qwen/Qwen2.5-7B-Instruct' } }) },
      { action_id: ACTION_IDS.approve, value: approveB.value },
    ];
    for (const button of forged) expect((await click(h, postA!, a.ts, button)).status).toBe(200);
    await waitUntil(() => (h!.slack.ephemerals.length >= forged.length ? true : undefined), 20_000, 'the refusals of forged clicks');
    for (const e of h.slack.ephemerals) expect(e.text).toMatch(/does not match the button I posted|not one this thread offers/);
    await settle();
    expect(await sandboxCounts(h.db.db)).toMatchObject({ runs: 0 });
    expect(await buttonTriggers(h)).toHaveLength(0);

    // A's real value on A's message, sent as if from thread B: it acts in A's thread only.
    await clickFive(h, postA!, b.ts, approveA);
    await waitUntil(async () => ((await sandboxCounts(h!.db.db)).runs === 1 ? true : undefined), 30_000, 'the approved run');
    await expectFourRefusals(h);
    await expectRetired(h, postA!, a.ts, approveA.text.text);
    await clickHoursLater(h, postA!, a.ts, approveA);
    await settle();
    const runs = await h.db.db.selectFrom('resources').innerJoin('chats', 'chats.id', 'resources.chat_id').select(['chats.thread_ts', 'resources.details']).where('resources.kind', '=', 'run').execute();
    expect(runs).toHaveLength(1);
    expect(runs[0]!.thread_ts).toBe(a.ts);
    expect((runs[0]!.details as { modelId: string }).modelId).toBe('qwen/Qwen2.5-0.5B-Instruct');
    expect(await sandboxCounts(h.db.db)).toMatchObject({ runs: 1 });
    // Thread B's button is untouched and still works for its own launch.
    await click(h, postB!, b.ts, approveB);
    await waitUntil(async () => ((await sandboxCounts(h!.db.db)).runs === 2 ? true : undefined), 30_000, 'thread B\'s approved run');
  }, 120_000);

  it('pick: five concurrent clicks continue the chat once', async () => {
    h = await startHarness({ script: loopScript() });
    const mention = await h.mention({ user: OWNER, text: '<@UBOT> Run benchmark 104 on Qwen2.5-7B-Turbo' });
    const [post] = await h.waitForPosts(mention.ts, 1, 30_000);
    const pick = buttonsOf(post!).find((b) => b.action_id.startsWith(ACTION_IDS.pickOption))!;
    expect(pick).toBeDefined();
    await clickFive(h, post!, mention.ts, pick);
    await h.waitForPosts(mention.ts, 2, 30_000);
    await expectFourRefusals(h);
    await expectRetired(h, post!, mention.ts, pick.text.text);
    await clickHoursLater(h, post!, mention.ts, pick);
    await settle();
    expect(await buttonTriggers(h)).toHaveLength(1);
    expect(h.posts(mention.ts)).toHaveLength(2);
  }, 120_000);

  it('retry: five concurrent clicks and a stranger\'s retry the turn once', async () => {
    h = await startHarness({ script: loopScript() });
    h.model.failNext(1, { status: 400, type: 'invalid_request_error', message: 'refused for the test' });
    const mention = await h.mention({ user: OWNER, text: RUN_104 });
    const [failure] = await h.waitForPosts(mention.ts, 1, 30_000);
    const retry = buttonsOf(failure!).find((b) => b.action_id === ACTION_IDS.retry)!;
    expect(retry).toBeDefined();
    // Someone who may not spend: refused, and the grant is still there for the owner.
    await click(h, failure!, mention.ts, retry, 'USTRANGER');
    await waitUntil(() => ephemeralsTo(h!, 'USTRANGER', /^Only <@UOWNER>/)[0], 20_000, 'the stranger refused');
    expect(await buttonTriggers(h)).toHaveLength(0);

    await clickFive(h, failure!, mention.ts, retry);
    await h.waitForPosts(mention.ts, 2, 30_000);
    await expectFourRefusals(h);
    await expectRetired(h, failure!, mention.ts, 'Retry');
    await clickHoursLater(h, failure!, mention.ts, retry);
    await settle();
    expect(await buttonTriggers(h)).toHaveLength(1);
    expect(h.posts(mention.ts)).toHaveLength(2);
  }, 120_000);
});

describe('the end of a loop', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('states the final agent cost, its own turn included, and "Keep the base model" records the decision', async () => {
    h = await startHarness({ script: loopScript() });
    const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    const verdict = await waitUntil(
      () => h!.posts(mention.ts).find((p) => JSON.stringify(p.blocks ?? []).includes('"type":"table"')),
      90_000,
      'the comparison message',
    );
    const turns = await h.db.db.selectFrom('turns').select('cost_usd').where('team_id', '=', TEAM).orderBy('id').execute();
    expect(turns).toHaveLength(4);
    const total = await sql<{ total: string }>`select sum(cost_usd)::text as total from turns where team_id = ${TEAM}`.execute(h.db.db);
    const sum = Number(total.rows[0]!.total);
    const cost = JSON.stringify((verdict.blocks as Array<{ text?: { text?: string } }>).find((b) => b.text?.text?.startsWith('*Total:*')));
    expect(cost).toMatch(/agent \$[\d.]+ \(4 turns: /);
    expect(cost).toContain(`$${sum.toFixed(4)} agent`);
    expect(cost).toContain(`agent $${sum.toFixed(4)} (4 turns: `);
    for (const t of turns) expect(cost).toContain(`$${Number(t.cost_usd).toFixed(4)}`);
    // The Home tab's figures for the same turns add up to the same total.
    expect(sum).toBeCloseTo(turns.reduce((s, t) => s + Number(t.cost_usd), 0), 10);
    expect(formatUsd(String(sum))).toBe(`$${sum.toFixed(4)}`);

    const keep = buttonsOf(verdict).find((b) => b.text.text === 'Keep the base model')!;
    expect(keep).toBeDefined();
    await clickFive(h, verdict, mention.ts, keep);
    await h.waitForPosts(mention.ts, 5, 30_000);
    await expectRetired(h, verdict, mention.ts, 'Keep the base model');
    const chat = await h.db.db.selectFrom('chats').select(['decision']).where('thread_ts', '=', mention.ts).executeTakeFirstOrThrow();
    expect(chat.decision).toMatchObject({ kind: 'keep_model', modelId: 'qwen/Qwen2.5-0.5B-Instruct', by: OWNER, label: 'Keep the base model' });
    const reply = h.posts(mention.ts)[4]!;
    expect(reply.text).toContain('keeps the model qwen/Qwen2.5-0.5B-Instruct');
    expect(reply.text).toMatch(/plan is closed/);
    const activity = await h.db.db.selectFrom('activity').select(['trigger_label', 'summary']).where('team_id', '=', TEAM).orderBy('id').execute();
    expect(activity.at(-1)).toMatchObject({ trigger_label: 'Button: Keep the base model', summary: expect.stringContaining('keeps the model qwen/Qwen2.5-0.5B-Instruct') });
    await waitUntil(() => (JSON.stringify(h!.slack.homeViews.get(OWNER) ?? {}).includes('Button: Keep the base model') ? true : undefined), 20_000, 'the decision in the Home tab');
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });
    expect(await buttonTriggers(h)).toHaveLength(1);
  }, 150_000);
});

describe('the spending cap across threads', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('stops one person\'s 20 threads at their cap, offers Approve, and an Approve click launches exactly that run', async () => {
    h = await startHarness({ script: loopScript(), env: { SPEND_CAP_PERSON: '20', WORKER_CONCURRENCY: '4' } });
    const threads = [];
    for (let i = 0; i < 20; i += 1) threads.push((await h.mention({ user: OWNER, text: RUN_104 })).ts);
    const firstPosts = await Promise.all(threads.map(async (ts) => (await h!.waitForPosts(ts, 1, 90_000))[0]!));
    const launched = firstPosts.filter((p) => /Launched run/.test(p.text));
    const stopped = firstPosts.filter((p) => buttonsOf(p).some((b) => b.action_id === ACTION_IDS.approve));
    const price = Number((await h.db.db.selectFrom('resources').select('price_estimate').where('kind', '=', 'run').executeTakeFirstOrThrow()).price_estimate);
    const fits = Math.floor(20 / price);
    expect(launched).toHaveLength(fits);
    expect(stopped).toHaveLength(20 - fits);
    expect((await sandboxCounts(h.db.db)).runs).toBe(fits);
    const refusals = h.model.requests.flatMap((r) => JSON.stringify(r.body.messages)).filter((m) => m.includes('cap for the last 7 days'));
    expect(refusals.length).toBeGreaterThan(0);

    // The owner approves one stopped thread: exactly that launch, above the cap.
    const target = stopped[0]!;
    const approve = buttonsOf(target).find((b) => b.action_id === ACTION_IDS.approve)!;
    await click(h, target, target.threadTs!, approve);
    await waitUntil(async () => ((await sandboxCounts(h!.db.db)).runs === fits + 1 ? true : undefined), 30_000, 'the approved run');
    await settle();
    expect((await sandboxCounts(h.db.db)).runs).toBe(fits + 1);

    // The Home tab shows the person where they stand.
    await waitUntil(() => {
      const home = JSON.stringify(h!.slack.homeViews.get(OWNER) ?? {});
      return home.includes('Your spending cap (last 7 days)') && /of 20\.00 credits \(reached/.test(home) ? true : undefined;
    }, 20_000, 'the cap standing in the Home tab');
  }, 180_000);
});
