// End to end: one message in, one verdict out, each step woken by the platform's signal.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxFaults } from '@verdict/platform/sandbox/sandbox';
import { webhookHeaders } from '@verdict/contract/webhooks';
import { compareRuns, formatPercent, formatPoints, formatPointsRange, formatPValue, type Proportion } from '../../src/analysis/index.js';
import { fetchOutcomes } from '../../src/agent/tools/benchmark-analyze.js';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { formatCredits, formatUsd } from '../../src/slack/blocks/app-home.js';
import { PLAN_STEP_KINDS } from '../../src/agent/plan.js';
import { sendBlockAction } from '../kit/fakes/slack/index.js';
import { CHANNEL, sandboxCounts, startHarness, TEAM, type Harness } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';
import { loopScript, SEED_MESSAGE, type LoopScriptOptions } from '../kit/loop-script.js';

const OWNER = 'UOWNER';

/** Every text a person sees in blocks or a view: text objects and table cells, not action ids or button values. */
function visibleTexts(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) visibleTexts(item, out);
  } else if (node && typeof node === 'object') {
    const obj = node as Record<string, unknown>;
    if (['plain_text', 'mrkdwn', 'raw_text'].includes(String(obj.type)) && typeof obj.text === 'string') out.push(obj.text);
    for (const [key, value] of Object.entries(obj)) if (key !== 'text' || typeof value !== 'string') visibleTexts(value, out);
  }
  return out;
}

/** Words of the code that must never reach a person: plan step kinds, enum values, tool names. */
const INTERNAL_WORDS = [
  ...PLAN_STEP_KINDS.filter((k) => k.includes('_')),
  'no_detectable_change', 'train_on_failures', 'run_benchmark', 'keep_model', 'not_trained_on', 'all_questions',
  'exact_mcnemar_and_newcombe', 'paired_bootstrap', 'stratified_wilson', 'stratified_normal', 'break_rate_vs_rerun',
  'exact_match', 'per_model_size', 'plan step', 'benchmark-analyze', 'dataset-build', 'training-launch', 'benchmark-launch',
];

function expectNoInternalWords(posts: ReadonlyArray<{ ts: string; text: string; blocks?: unknown[] }>): void {
  expect(posts.length).toBeGreaterThan(0);
  for (const post of posts) {
    const texts = [post.text, ...visibleTexts(post.blocks ?? [])];
    expect(texts.flatMap(internalWordsIn), `post ${post.ts}: ${post.text.slice(0, 80)}`).toEqual([]);
  }
}

/** Internal identifiers in a text: the known words, and any snake_case word (emoji codes, links and ids with digits aside). */
function internalWordsIn(text: string): string[] {
  const plain = text.replace(/<[^>]*>/g, ' ').replace(/https?:\/\/\S+/g, ' ').replace(/:[a-z0-9_+-]+:/g, ' ');
  const found = INTERNAL_WORDS.filter((w) => plain.includes(w));
  for (const m of plain.matchAll(/\b[a-z]+(?:_[a-z]+)+\b/g)) found.push(m[0]);
  return found;
}



async function startLoop(options: { env?: Record<string, string>; script?: LoopScriptOptions; mode?: 'inprocess' | 'process'; faults?: Partial<SandboxFaults>; startingBalance?: number } = {}) {
  const h = await startHarness({
    script: loopScript(options.script),
    env: options.env ?? {},
    mode: options.mode ?? 'inprocess',
    botOptions: {
      ...(options.faults || options.startingBalance !== undefined
        ? { sandbox: { ...(options.faults ? { faults: options.faults } : {}), ...(options.startingBalance !== undefined ? { startingBalance: options.startingBalance } : {}) } }
        : {}),
    },
  });
  const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
  expect(mention.status).toBe(200);
  return { h, threadTs: mention.ts };
}

/** Waits for the comparison message (the table) in the thread. */
async function waitForVerdict(h: Harness, threadTs: string, timeoutMs = 60_000) {
  return waitUntil(
    () => h.posts(threadTs).find((p) => JSON.stringify(p.blocks ?? []).includes('"type":"table"')),
    timeoutMs,
    'the comparison message',
  );
}

describe('the autonomous loop', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('drives one message to the verdict with exactly one launch per step, every number from the platform and the analysis', async () => {
    const loop = await startLoop();
    h = loop.h;
    const verdict = await waitForVerdict(h, loop.threadTs);
    const posts = h.posts(loop.threadTs);
    // Launch report, training report, trained-run report, comparison.
    expect(posts.length).toBe(4);
    for (const post of posts) expect(post.text).toContain(`<@${OWNER}>`);
    expect(posts[0]!.text).toMatch(/Launched run \S+ of benchmark 104/);
    expect(posts[0]!.text).toContain('qwen/Qwen2.5-0.5B-Instruct');
    expect(posts[0]!.text).toMatch(/Balance [\d.]+ credits/);
    expect(posts[1]!.text).toMatch(/score [\d.]+% over 100 questions; per category: arithmetic/);
    expect(posts[1]!.text).toMatch(/Dataset \S+ built from run/);
    expect(posts[1]!.text).toMatch(/Launched LoRA training/);
    expect(posts[2]!.text).toMatch(/Launched run \S+ of benchmark 104/);
    // Each launch report says when the step should finish, from the platform's estimated_finish_at, in UTC.
    // A report written after the estimate passed (a loaded machine) says "any moment now (it was due around HH:MM UTC)".
    const eta = /Estimated finish: (?:under a minute|about \d+ min|any moment now)[^;]* \d\d:\d\d UTC\)?; the platform will signal/;
    expect(posts[0]!.text).toMatch(eta);
    expect(posts[0]!.text).toContain('This is step 1 of 4 of the agreed plan (the baseline run).');
    expect(posts[1]!.text.split('Launched LoRA training')[1]).toMatch(eta);
    expect(posts[1]!.text).toContain('This is step 2 of 4 of the agreed plan (the training).');
    expect(posts[2]!.text).toMatch(eta);
    expect(posts[2]!.text).toContain('This is step 3 of 4 of the agreed plan (the run of the trained model).');

    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });

    // Each step after the first was woken by a webhook, not a click.
    const triggers = await h.db.db.selectFrom('triggers').select(['kind', 'payload']).where('team_id', '=', TEAM).orderBy('id').execute();
    expect(triggers.map((t) => t.kind)).toEqual(['mention', 'platform_event', 'platform_event', 'platform_event']);
    expect(triggers.slice(1).map((t) => (t.payload as { type: string }).type)).toEqual(['run.completed', 'training.completed', 'run.completed']);

    // Recompute the comparison from the sandbox's own data and check the table against it.
    const bot = h.bot()!;
    const runs = await h.db.db.selectFrom('resources').selectAll().where('kind', '=', 'run').orderBy('id').execute();
    const [before, after] = runs;
    const trainedModel = (await bot.platform.getRun(after!.platform_id)).modelId;
    const model = await bot.platform.getModel(trainedModel);
    const dataset = await bot.platform.getDataset(model.datasetId!);
    const expected = compareRuns({
      before: await fetchOutcomes(bot.platform, before!.platform_id),
      after: await fetchOutcomes(bot.platform, after!.platform_id),
      trainedOn: dataset.trainedQuestionIds,
      heldOut: dataset.heldOutQuestionIds,
    });
    const blocks = JSON.stringify(verdict.blocks);
    const table = (verdict.blocks as Array<{ type: string; rows?: Array<Array<{ text: string }>> }>).find((b) => b.type === 'table')!;
    const row = (label: string) => table.rows!.find((r) => r[0]!.text.startsWith(label))!.map((c) => c.text);
    // Each accuracy with its Wilson interval.
    const withInterval = (p: Proportion) => `${formatPercent(p.rate)} (${(p.interval.lower * 100).toFixed(1)}–${(p.interval.upper * 100).toFixed(1)})`;
    expect(row('All questions')).toEqual([
      `All questions (${expected.overall.questions})`,
      withInterval(expected.overall.accuracyBefore),
      withInterval(expected.overall.accuracyAfter),
      `${formatPoints(expected.overall.change.estimate).replace(' pts', '')} pts (${formatPointsRange(expected.overall.change.interval)})`,
    ]);
    expect(row('Fixed')[2]).toBe(String(expected.overall.table.fixed));
    expect(row('Broken')[2]).toBe(String(expected.overall.table.broken));
    expect(row('Both right')[2]).toBe(String(expected.overall.table.bothRight));
    expect(row('Both wrong')[2]).toBe(String(expected.overall.table.bothWrong));
    expect(row('McNemar')[3]).toBe(formatPValue(expected.overall.mcnemarP));
    expect(row('Trained on')[2]).toBe(withInterval(expected.training!.trainedOn.accuracyAfter));
    expect(row('Not trained on')[2]).toBe(withInterval(expected.training!.notTrainedOn.accuracyAfter));
    expect(blocks).toContain(expected.verdict.reason.slice(0, 60));
    // Every failed question was trained on: the verdict is "memorized", says what was measured and
    // that generalization was not, and the questions not trained on are labelled a forgetting check.
    expect(expected.training!.generalizationMeasured).toBe(false);
    const trained = expected.training!.trainedOn;
    const headline = (verdict.blocks as Array<{ type: string; text?: { text: string } }>).find((b) => b.type === 'section' && b.text!.text.startsWith('*:'))!.text!.text.split('\n')[0];
    expect(headline).toBe(`*:brain: Memorized: ${trained.accuracyAfter.count} of ${trained.questions} trained questions now right; generalization not measured*`);
    expect(blocks).not.toMatch(/no detectable change/i);
    expect(row('Not trained on')[0]).toBe(`Not trained on, all right before (forgetting check) (${expected.training!.notTrainedOn.questions})`);
    expect(blocks).toContain('that row is a forgetting check and cannot show whether training helps on questions it did not see');
    expect(blocks).toMatch(/memorization/i);
    expect(blocks).toContain('Retrain with 30% held out');
    // Cost of every step, charged by the platform.
    const charged = await h.db.db.selectFrom('resources').select(['kind', 'price_charged']).where('kind', 'in', ['run', 'training']).execute();
    for (const r of charged) {
      expect(r.price_charged).not.toBeNull();
      expect(blocks).toContain(`${Number(r.price_charged).toFixed(2)} cr`);
    }
    // The questions that changed, in a data table whose counts are the comparison's.
    const dataTable = (verdict.blocks as Array<{ type: string; caption?: string; rows?: Array<Array<{ text: string }>> }>).find((b) => b.type === 'data_table')!;
    expect(dataTable.caption).toBe(`Questions that changed: ${expected.overall.table.fixed} fixed, ${expected.overall.table.broken} broken, ${expected.overall.table.bothWrong} still wrong`);
    expect(dataTable.rows!.filter((r) => r[0]!.text === 'Fixed')).toHaveLength(expected.overall.table.fixed);
    // The chart follows the verdict in the thread: one PNG, shared once.
    const files = () => loop.h.filePosts(loop.threadTs);
    const charts = await waitUntil(() => (files().length > 0 ? files() : undefined), 30_000, 'the comparison chart');
    expect(charts).toHaveLength(1);
    expect(Number(charts[0]!.ts)).toBeGreaterThan(Number(verdict.ts));
    expect(h.slack.files.get(charts[0]!.files![0]!.id)!.content.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(h.slack.violations).toEqual([]);

    // The owner's Home tab shows one entry per turn with what it started and what it cost.
    const turns = await h.db.db.selectFrom('turns').selectAll().where('team_id', '=', TEAM).orderBy('id').execute();
    expect(turns).toHaveLength(4);
    const home = await waitUntil(
      () => {
        const view = h!.slack.homeViews.get(OWNER);
        const text = view ? JSON.stringify(view) : '';
        return turns.every((t) => text.includes(formatUsd(t.cost_usd))) && text.includes('run.completed') ? text : undefined;
      },
      20_000,
      'a Home view listing every turn',
    );
    for (const label of ['Mention', 'run.completed', 'training.completed']) expect(home).toContain(label);
    // Free items (the dataset, the comparison) say "free".
    const homeView = h.slack.homeViews.get(OWNER)!;
    const homeText = visibleTexts(homeView).join('\n');
    const dataset0 = await h.db.db.selectFrom('resources').select('platform_id').where('kind', '=', 'dataset').executeTakeFirstOrThrow();
    expect(homeText).toMatch(new RegExp(`${dataset0.platform_id}[^\n]* · free`));
    expect(homeText).not.toMatch(/~0\.00 credits est\./);

    // No internal identifier reaches any post of the loop or the Home tab.
    expectNoInternalWords(h.posts(loop.threadTs));
    expect(visibleTexts(homeView).flatMap(internalWordsIn)).toEqual([]);
    for (const r of charged) expect(home).toContain(`${formatCredits(r.price_charged)} credits charged`);
    for (const r of runs) expect(home).toContain(r.platform_id);
  }, 120_000);

  it('ends the same with every webhook duplicated three times and reordered', async () => {
    const loop = await startLoop({ faults: { webhookDuplicate: 1, webhookReorder: 1, webhookReorderMaxHoldMs: 1000 } });
    h = loop.h;
    await waitForVerdict(h, loop.threadTs);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });
    expect(h.posts(loop.threadTs)).toHaveLength(4);
  }, 120_000);

  it('finishes through the reconcile sweep when every webhook is dropped', async () => {
    const loop = await startLoop({ faults: { webhookDrop: 1 }, env: { RECONCILE_OVERDUE_SECONDS: '1', RECONCILE_CRON: '* * * * * *' } });
    h = loop.h;
    await waitForVerdict(h, loop.threadTs, 90_000);
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });
    const kinds = await h.db.db.selectFrom('triggers').select('kind').where('team_id', '=', TEAM).orderBy('id').execute();
    expect(kinds.map((k) => k.kind)).toEqual(['mention', 'reconcile', 'reconcile', 'reconcile']);
  }, 120_000);

  it('ignores a finish event that arrives while the run is still running, and still wakes on the real finish', async () => {
    const loop = await startLoop({ env: { SANDBOX_TIME_SCALE: '0.05' } });
    h = loop.h;
    await h.waitForPosts(loop.threadTs, 1, 30_000);
    const [run] = (await sql<{ id: string; status: string }>`select id, status from sandbox.runs`.execute(h.db.db)).rows;
    expect(['queued', 'running'], 'the baseline run must not have finished yet for this test').toContain(run?.status);
    const modelCalls = h.model.requests.length;
    const body = JSON.stringify({ type: 'run.completed', id: 'msg_early_1', created_at: new Date().toISOString(), data: { id: run!.id } });
    const res = await fetch(`${h.url()}/webhooks/platform`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...webhookHeaders(h.bot()!.sandbox!.webhookSecret, 'msg_early_1', new Date(), body) },
    });
    expect(await res.json()).toEqual({ ok: true, outcome: 'enqueued' });
    const early = await waitUntil(async () => {
      const row = await h!.db.db.selectFrom('triggers').select(['status', 'error', 'dedupe_key']).where(sql<boolean>`payload->>'webhookId' = 'msg_early_1'`).executeTakeFirst();
      return row?.status === 'done' ? row : undefined;
    }, 20_000, 'the early trigger to end');
    expect(early.error).toMatch(/still running/);
    expect(early.dedupe_key).toMatch(/:early:/);
    expect(h.model.requests.length).toBe(modelCalls);
    expect(h.posts(loop.threadTs)).toHaveLength(1);
    // Back with the sweep, in case the real finish event never comes.
    const resource = await h.db.db.selectFrom('resources').select('notified_at').where('platform_id', '=', run!.id).executeTakeFirstOrThrow();
    expect(resource.notified_at).toBeNull();

    // The real finish wakes the chat: the next step (dataset and training) happens once.
    await h.waitForPosts(loop.threadTs, 2, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 1, trainings: 1, datasets: 1 });
    expect(h.posts(loop.threadTs)).toHaveLength(2);
    expect(h.posts(loop.threadTs)[1]!.text).toMatch(/Launched LoRA training/);
  }, 120_000);

  it('retries an event-woken turn when the platform is down at a launch, without the model seeing the outage', async () => {
    const loop = await startLoop({ faults: { apiErrorRate: 1, apiErrorOnly: 'POST /api/v1/datasets' } });
    h = loop.h;
    const retried = await waitUntil(
      async () => ((await h!.logs()).includes('platform unavailable; the turn will be retried') ? true : undefined),
      60_000,
      'a turn retried for the platform outage',
    );
    expect(retried).toBe(true);
    expect(h.posts(loop.threadTs)).toHaveLength(1);
    h.bot()!.sandbox!.setFaults({});
    await waitForVerdict(h, loop.threadTs, 90_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });
    expect(h.posts(loop.threadTs)).toHaveLength(4);
    const sawOutage = h.model.requests.some((r) => JSON.stringify(r.body.messages).includes('sandbox-injected'));
    expect(sawOutage).toBe(false);
  }, 120_000);

  it('refuses an unplanned launch from an event-woken turn', async () => {
    const loop = await startLoop({ script: { rogueLaunch: { benchmarkId: '104', modelId: 'qwen/Qwen2.5-1.5B-Instruct' } } });
    h = loop.h;
    await h.waitForPosts(loop.threadTs, 2, 60_000);
    expect(await sandboxCounts(h.db.db)).toMatchObject({ runs: 1, trainings: 0 });
    const refusal = h.model.requests
      .flatMap((r) => JSON.stringify(r.body.messages))
      .find((m) => m.includes('Refused by the spend guard'));
    expect(refusal).toBeDefined();
  }, 120_000);

  it('stops before training when credits are short, with an approve button, and launches nothing', async () => {
    const loop = await startLoop({ startingBalance: 6 });
    h = loop.h;
    const posts = await h.waitForPosts(loop.threadTs, 2, 60_000);
    const second = `${posts[1]!.text}${JSON.stringify(posts[1]!.blocks)}`;
    expect(second).toMatch(/only [\d.]+ are available/);
    expect(second).toContain(ACTION_IDS.approve);
    expect(second).toMatch(/Approve [\d.]+ credits/);
    expect(await sandboxCounts(h.db.db)).toMatchObject({ runs: 1, trainings: 0 });
    expectNoInternalWords(posts);
  }, 120_000);

  it('refuses a spend button pressed by someone who may not spend', async () => {
    const loop = await startLoop({ env: { SPEND_CONFIRM_THRESHOLD: '3' } });
    h = loop.h;
    // The first launch (4 credits) is above the threshold of 3: an approve button appears.
    const [first] = await h.waitForPosts(loop.threadTs, 1, 60_000);
    const approve = JSON.stringify(first!.blocks);
    expect(approve).toContain(ACTION_IDS.approve);
    const button = (first!.blocks as Array<{ type: string; elements?: Array<{ action_id: string; value: string }> }>)
      .flatMap((b) => b.elements ?? [])
      .find((e) => e.action_id === ACTION_IDS.approve)!;
    const stranger = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
      user: 'USTRANGER',
      teamId: TEAM,
      channel: CHANNEL,
      messageTs: first!.ts,
      threadTs: loop.threadTs,
      actionId: ACTION_IDS.approve,
      value: button.value,
    });
    expect(stranger.status).toBe(200);
    await waitUntil(() => h!.slack.ephemerals.find((e) => e.user === 'USTRANGER'), 20_000, 'the ephemeral refusal');
    expect(await sandboxCounts(h.db.db)).toMatchObject({ runs: 0 });

    // The owner's click launches exactly that run.
    await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
      user: OWNER,
      teamId: TEAM,
      channel: CHANNEL,
      messageTs: first!.ts,
      threadTs: loop.threadTs,
      actionId: ACTION_IDS.approve,
      value: button.value,
    });
    await waitUntil(async () => ((await sandboxCounts(h!.db.db)).runs === 1 ? true : undefined), 30_000, 'the approved run');
  }, 120_000);

  it('finishes after the bot is killed after each launch and restarted, with no extra launch and no duplicate message', async () => {
    const loop = await startLoop({ mode: 'process', env: { RECONCILE_OVERDUE_SECONDS: '2', RECONCILE_CRON: '* * * * * *' } });
    h = loop.h;
    for (let posts = 1; posts <= 3; posts += 1) {
      await h.waitForPosts(loop.threadTs, posts, 60_000);
      await h.kill();
      await h.restart();
    }
    await waitForVerdict(h, loop.threadTs, 90_000);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });
    expect(h.posts(loop.threadTs)).toHaveLength(4);
  }, 180_000);

  it('without a plan, reports the result, starts nothing else, and a next-step button continues the chat', async () => {
    const h0 = await startHarness({ script: loopScript() });
    h = h0;
    const mention = await h0.mention({ user: OWNER, text: '<@UBOT> Run benchmark 104 on Qwen2.5-0.5B-Instruct' });
    const posts = await h0.waitForPosts(mention.ts, 2, 60_000);
    expect(await sandboxCounts(h0.db.db)).toMatchObject({ runs: 1, trainings: 0, datasets: 0 });
    // The report of the finished run offers next steps instead of starting them.
    const report = posts[1]!;
    expect(report.text).toContain(`<@${OWNER}>`);
    expect(report.text).toMatch(/score [\d.]+%/);
    const buttons = (report.blocks as Array<{ type: string; elements?: Array<{ action_id: string; value: string; text: { text: string } }> }>)
      .flatMap((b) => (b.type === 'actions' ? (b.elements ?? []) : []));
    const train = buttons.find((b) => b.text.text.startsWith('Train on failures'));
    expect(train).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await sandboxCounts(h0.db.db)).toMatchObject({ runs: 1, trainings: 0 });

    await sendBlockAction(`${h0.url()}/slack/events`, h0.env.SLACK_SIGNING_SECRET!, {
      user: OWNER,
      teamId: TEAM,
      channel: CHANNEL,
      messageTs: report.ts,
      threadTs: mention.ts,
      actionId: train!.action_id,
      value: train!.value,
    });
    await waitUntil(async () => ((await sandboxCounts(h0.db.db)).trainings === 1 ? true : undefined), 30_000, 'the training the button asked for');
    expect(await sandboxCounts(h0.db.db)).toMatchObject({ runs: 1, datasets: 1 });
    // The button's launch report: when it should finish, and no internal word anywhere in the thread.
    const [, , launched] = await h0.waitForPosts(mention.ts, 3, 30_000);
    expect(launched!.text).toMatch(/Launched LoRA training[^]*Estimated finish: [^;]+ \d\d:\d\d UTC\)?; the platform will signal/);
    expectNoInternalWords(h0.posts(mention.ts));
  }, 120_000);

  it('asks which model when the name matches none, offering the closest as buttons', async () => {
    const h0 = await startHarness({ script: loopScript() });
    h = h0;
    const mention = await h0.mention({ user: OWNER, text: '<@UBOT> Run benchmark 104 on Qwen2.5-7B-Turbo' });
    const [post] = await h0.waitForPosts(mention.ts, 1, 30_000);
    expect(post!.text).toMatch(/No model matches/);
    expect(JSON.stringify(post!.blocks)).toContain('qwen/Qwen2.5-0.5B-Instruct');
    expect(await sandboxCounts(h0.db.db)).toMatchObject({ runs: 0 });
  }, 60_000);

  it('reports a failed run plainly and launches nothing after it', async () => {
    const loop = await startLoop({ faults: { runFailureRate: 1 } });
    h = loop.h;
    const posts = await h.waitForPosts(loop.threadTs, 2, 60_000);
    expect(posts[1]!.text).toContain(`<@${OWNER}>`);
    expect(posts[1]!.text).toMatch(/: failed/);
    expect(posts[1]!.text).toMatch(/error: /);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 1, trainings: 0, datasets: 0 });
    const chat = await h.db.db.selectFrom('chats').select('plan').executeTakeFirstOrThrow();
    expect((chat.plan as { steps: Array<{ kind: string; status: string }> }).steps[0]).toMatchObject({ kind: 'baseline_run', status: 'failed' });
  }, 60_000);

  it('offers the existing benchmarks as buttons when the benchmark does not exist', async () => {
    const h0 = await startHarness({ script: loopScript() });
    h = h0;
    const mention = await h0.mention({ user: OWNER, text: '<@UBOT> Run benchmark 999 on Qwen2.5-0.5B-Instruct' });
    const [post] = await h0.waitForPosts(mention.ts, 1, 30_000);
    expect(post!.text).toMatch(/Benchmark 999 does not exist/);
    expect(JSON.stringify(post!.blocks)).toContain('104: ');
    expect(await sandboxCounts(h0.db.db)).toMatchObject({ runs: 0 });
  }, 60_000);
});
