// Fault scenarios: crashes, a Postgres restart, Slack and model outages, platform errors, webhook storms, replicas.
import { sql } from 'kysely';
import { startSandbox } from '@verdict/platform/sandbox/sandbox';
import { freePortOutsideEphemeralRange } from '../test/kit/ports.js';
import { startEmbeddedPostgres } from '@verdict/runtime/embedded-postgres';
import { ACTION_IDS } from '../src/slack/action-ids.js';
import { sendBlockAction, startFakeSlack } from '../test/kit/fakes/slack/index.js';
import { startScriptedAnthropic, type ScriptReply } from '../test/kit/fakes/anthropic/index.js';
import { CHANNEL, type Harness, type HarnessOptions, isVerdict, sandboxCounts, startHarness, TEAM, waitForVerdict } from '../test/kit/harness.js';
import { waitUntil } from '../test/kit/wait.js';
import { loopScript, SEED_MESSAGE } from '../test/kit/loop-script.js';
import { Checks, type Figure } from './figure.js';
import { checkLoopThread, launchesPerChat } from './loop-checks.js';
import { seeded } from '../test/kit/random.js';
import { sleep, within } from '../test/kit/wait.js';
import { type NewDatabase, startPrivatePostgres } from '../test/kit/database.js';
import { stateDump } from './state-dump.js';
import { startWebhookProxy } from './webhook-proxy.js';

export const OWNER = 'UOWNER';
const SWEEP_ENV = { RECONCILE_OVERDUE_SECONDS: '2', RECONCILE_CRON: '* * * * * *' };

async function loopHarness(options: Partial<HarnessOptions> & { newDatabase?: NewDatabase | undefined }): Promise<Harness> {
  const { newDatabase, ...rest } = options;
  return startHarness({
    script: loopScript(),
    ...rest,
    ...(newDatabase && !rest.databaseUrl ? { databaseUrl: await newDatabase() } : {}),
  });
}

/** SIGKILL at random points of the full loop (after a random model call, plus a random delay), restarting each time. */
export async function crashLoop(o: { points: number; seed?: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const random = seeded(o.seed ?? 1);
  let killed = 0;
  let loops = 0;
  const points: string[] = [];
  while (killed < o.points) {
    const h = await loopHarness({ mode: 'process', env: SWEEP_ENV, newDatabase: o.newDatabase });
    loops += 1;
    try {
      const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
      let progress = 0;
      while (killed < o.points) {
        const target = progress + 1 + Math.floor(random() * 3);
        await waitUntil(() => (h.model.requests.length >= target || h.posts(m.ts).some(isVerdict) ? true : undefined), 90_000, `model call ${target}`);
        if (h.posts(m.ts).some(isVerdict)) break;
        const delay = Math.floor(random() * 500);
        await sleep(delay);
        points.push(`${h.model.requests.length}+${delay}ms`);
        await h.kill();
        killed += 1;
        await h.restart();
        progress = h.model.requests.length;
      }
      await waitForVerdict(h, m.ts, 120_000);
      await sleep(1500);
      c.equal(await sandboxCounts(h.db.db), { runs: 2, trainings: 1, datasets: 1 }, `loop ${loops}: sandbox launches`);
      checkLoopThread(c, h, m.ts, `loop ${loops}`);
      c.equal(h.slack.violations, [], `loop ${loops}: Slack violations`);
      c.equal(h.crashes, [], `loop ${loops}: unexpected exits`);
    } catch (error) {
      c.check(false, `loop ${loops}: ${(error as Error).message}`);
      console.log(`[crash] loop ${loops} stalled; exits ${JSON.stringify(h.crashes)}; state:\n${await stateDump(h.db.db)}`);
      const lines = (await h.logs()).split('\n').filter((line) => line.length > 0);
      console.log(`[crash] the bot's last log lines:\n${lines.slice(-15).map((line) => line.slice(0, 300)).join('\n')}`);
    } finally {
      await h.stop();
    }
  }
  return {
    fault: 'Process killed (SIGKILL) mid-loop',
    tried: `kill at a random model call + 0-500 ms, restart; ${loops} full loop(s)`,
    times: killed,
    held: 'every loop finished; 0 duplicate runs/trainings/datasets; 4 posts per thread, 0 duplicate, 0 lost',
    ms: Date.now() - started,
    failures: c.failures,
    extra: { points: points.join(',') },
  };
}

/** A dedicated Postgres stopped and started again on the same port while loops run. */
export async function postgresRestart(o: { restarts: number; downMs?: number }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  // A port below the kernel's ephemeral range: while Postgres is down, no other process binding
  // port 0 (bots, sandboxes, fakes of parallel tests) can take it.
  const port = await freePortOutsideEphemeralRange();
  const pg = await startPrivatePostgres({ port });
  let server = pg.server;
  const url = await pg.newDatabase();
  const h = await loopHarness({ mode: 'process', databaseUrl: url, env: SWEEP_ENV });
  let restarted = 0;
  let replaced = 0;
  let step = 'start';
  try {
    const threads: string[] = [];
    for (let i = 0; i < o.restarts; i += 1) {
      step = `loop ${i + 1}: first posts`;
      const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
      threads.push(m.ts);
      await h.waitForPosts(m.ts, 1 + (i % 3), 45_000);
      step = `restart ${i + 1}: stopping Postgres`;
      await within(30_000, server.stop(), 'Postgres to stop');
      await sleep(o.downMs ?? 1500);
      step = `restart ${i + 1}: starting Postgres`;
      server = await startEmbeddedPostgres({ dataDir: pg.dataDir, port });
      restarted += 1;
    }
    step = 'waiting for the verdicts';
    for (const ts of threads) await waitForVerdict(h, ts, 90_000);
    await sleep(1500);
    c.equal(await sandboxCounts(h.db.db), { runs: 2 * threads.length, trainings: threads.length, datasets: threads.length }, 'sandbox launches');
    threads.forEach((ts, i) => checkLoopThread(c, h, ts, `loop ${i + 1}`));
    c.equal(h.crashes, [], 'bot process exits');
    const health = await fetch(`${h.url()}/healthz`);
    c.equal(health.status, 200, 'health after the restarts');
    replaced = (await h.logs()).split('\n').filter((line) => line.includes('job workers replaced')).length;
  } catch (error) {
    c.check(false, `${step}: ${(error as Error).message}`);
    // What the bot said about it, for the next person who sees this fail.
    const lines = (await h.logs()).split('\n').filter((line) => /"level":(40|50|60)/.test(line) || (line.length > 0 && !line.startsWith('{')));
    console.log(`[postgres-restart] state:\n${await stateDump(h.db.db)}`);
    console.log(`[postgres-restart] bot exits: ${JSON.stringify(h.crashes)}; last warnings, errors and stderr of the bot:\n${lines.slice(-25).map((line) => line.slice(0, 400)).join('\n')}`);
  } finally {
    await within(30_000, h.stop(), 'the bot to stop').catch((error: unknown) => c.check(false, (error as Error).message));
    await within(30_000, server.stop(), 'Postgres to stop').catch((error: unknown) => c.check(false, (error as Error).message));
  }
  return {
    fault: 'Postgres restarted mid-loop',
    tried: `stop Postgres for ${o.downMs ?? 1500} ms after the 1st/2nd/3rd post of a loop, start it on the same port`,
    times: restarted,
    held: `the bot reconnected by itself; every loop finished with exactly one launch per step; job workers replaced ${replaced} time(s) after a worker died mid-outage`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** Slack answers 429 with Retry-After and 500s while a loop and a burst of mentions post into one channel. */
export async function slackFaults(o: { rateLimited: number; serverErrors: number; burst: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await loopHarness({ newDatabase: o.newDatabase });
  let injected = 0;
  try {
    const inject = () => {
      for (let i = 0; i < Math.max(o.rateLimited, o.serverErrors); i += 1) {
        if (i < o.rateLimited) h.slack.failNext('chat.postMessage', 1, { status: 429, retryAfter: 1 });
        if (i < o.serverErrors) h.slack.failNext('chat.postMessage', 1, { status: 500 });
      }
      injected += o.rateLimited + o.serverErrors;
    };
    inject();
    const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    await h.waitForPosts(m.ts, 1, 60_000);
    inject();
    const burst = await Promise.all(
      Array.from({ length: o.burst }, (_, i) => h.mention({ user: `UBURST${i}`, text: `<@UBOT> hello ${i}` })),
    );
    await waitForVerdict(h, m.ts, 120_000);
    for (const b of burst) await h.waitForPosts(b.ts, 1, 60_000);
    await sleep(2000);
    checkLoopThread(c, h, m.ts, 'loop');
    for (const b of burst) {
      const posts = h.posts(b.ts);
      c.equal(posts.length, 1, `burst thread ${b.ts}: answers`);
      if (posts.length !== 1) {
        const rows = await h.db.db.selectFrom('posts').select(['id', 'post_key', 'attempts', 'status', 'slack_ts', 'thread_ts']).where('thread_ts', '=', b.ts).execute();
        c.check(false, `burst thread ${b.ts}: slack ${JSON.stringify(posts.map((p) => [p.ts, p.text.slice(0, 60), p.metadata]))}; outbox ${JSON.stringify(rows)}`);
      }
    }
    c.equal(h.slack.violations, [], 'Slack violations (incl. rate-limit bursts)');
    c.equal(await sandboxCounts(h.db.db), { runs: 2, trainings: 1, datasets: 1 }, 'sandbox launches');
    const failedPosts = await h.db.db.selectFrom('posts').select('id').where('status', '=', 'failed').execute();
    c.equal(failedPosts.length, 0, 'posts given up');
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await h.stop();
  }
  return {
    fault: 'Slack Web API 429 + Retry-After, and 500s',
    tried: `${o.rateLimited}x429 and ${o.serverErrors}x500 on chat.postMessage, twice, during a loop plus ${o.burst} simultaneous mentions in the same channel`,
    times: injected,
    held: 'every message arrived once and in order; 0 rate-limit violations',
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** The model API answers 529 for a while after the first launch; then a permanent failure on a person's message. */
export async function modelOutage(o: { outageMs: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await loopHarness({ newDatabase: o.newDatabase, env: { AGENT_MAX_RETRIES: '1', AGENT_EVENT_RETRY_ATTEMPTS: '12' } });
  let overloaded = 0;
  try {
    const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    await h.waitForPosts(m.ts, 1, 60_000);
    const outageStart = h.model.requests.length;
    h.model.failFor(o.outageMs, { status: 529, type: 'overloaded_error' });
    await waitForVerdict(h, m.ts, o.outageMs + 120_000);
    overloaded = h.model.requests.slice(outageStart).filter((r) => r.status === 529).length;
    await sleep(1500);
    checkLoopThread(c, h, m.ts, 'loop');
    c.equal(await sandboxCounts(h.db.db), { runs: 2, trainings: 1, datasets: 1 }, 'sandbox launches');
    c.check(overloaded > 0, 'the outage was hit');
    c.check(!h.posts(m.ts).some((p) => /couldn't reach the model/i.test(p.text)), 'no failure message during a transient outage');

    h.model.failFor(600_000, { status: 529, type: 'overloaded_error' });
    const down = await h.mention({ user: OWNER, text: '<@UBOT> are you there?' });
    const [failure] = await h.waitForPosts(down.ts, 1, 60_000);
    c.check(/couldn't reach the model/i.test(failure?.text ?? ''), 'a clear failure message');
    const retry = (failure?.blocks as Array<{ elements?: Array<{ action_id: string; value: string }> }> | undefined)
      ?.flatMap((b) => b.elements ?? [])
      .find((e) => e.action_id.startsWith(ACTION_IDS.retry));
    c.check(retry !== undefined, 'a retry button');
    h.model.reset();
    h.model.setScript(loopScript());
    if (retry && failure) {
      await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
        user: OWNER,
        teamId: TEAM,
        channel: CHANNEL,
        messageTs: failure.ts,
        threadTs: down.ts,
        actionId: retry.action_id,
        value: retry.value,
      });
      await h.waitForPosts(down.ts, 2, 30_000);
      c.check(!/couldn't reach/i.test(h.posts(down.ts)[1]?.text ?? ''), 'the retry button answered');
    }
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await h.stop();
  }
  return {
    fault: 'Model API 529 overloaded, then healthy; then down for good',
    tried: `529 on every call for ${Math.round(o.outageMs / 1000)} s from the first platform event (AGENT_MAX_RETRIES=1, job-engine backoff)`,
    times: overloaded,
    held: 'the loop resumed without a person, one launch per step; a permanent failure posted one clear message with a working Retry button',
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** Platform API errors (503/429) and slowness on a share of calls. */
export async function platformFaults(o: { loops: number; apiErrorRate: number; apiSlowRate: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await loopHarness({
    newDatabase: o.newDatabase,
    env: SWEEP_ENV,
    botOptions: { sandbox: { faults: { apiErrorRate: o.apiErrorRate, apiSlowRate: o.apiSlowRate, apiSlowMs: 300, retryAfterSeconds: 0 } } },
  });
  let toolErrors = 0;
  let turnRetries = 0;
  try {
    const threads: string[] = [];
    for (let i = 0; i < o.loops; i += 1) threads.push((await h.mention({ user: OWNER, text: SEED_MESSAGE, channel: `C0PF${i}` })).ts);
    for (const [i, ts] of threads.entries()) await waitForVerdict(h, ts, 180_000, `C0PF${i}`);
    await sleep(800);
    threads.forEach((ts, i) => checkLoopThread(c, h, ts, `loop ${i + 1}`, `C0PF${i}`));
    c.equal(await sandboxCounts(h.db.db), { runs: 2 * o.loops, trainings: o.loops, datasets: o.loops }, 'sandbox launches');
    const lines = (await h.logs()).split('\n');
    toolErrors = lines.filter((line) => line.includes('"tool returned an error"')).length;
    turnRetries = lines.filter((line) => line.includes('platform unavailable; the turn will be retried')).length;
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await h.stop();
  }
  return {
    fault: 'Platform API errors and slowness',
    tried: `apiErrorRate ${o.apiErrorRate} (503/429), apiSlowRate ${o.apiSlowRate} (300 ms), ${o.loops} loop(s)`,
    times: o.loops,
    held: `every loop finished with exactly one launch per step; after the client's 4 attempts, ${toolErrors} tool call(s) failed in person-started turns (the model saw the error) and ${turnRetries} event-woken turn(s) were retried by the job engine`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** Concurrent loops whose webhooks are duplicated, delayed, reordered and dropped by a hostile proxy and the sandbox. */
export async function webhookStorm(o: { loops: number; seed?: number; platformDuplicate?: number; proxyDuplicate?: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await loopHarness({ newDatabase: o.newDatabase, env: { ...SWEEP_ENV, WORKER_CONCURRENCY: '8' }, botOptions: { sandbox: { faults: { webhookDuplicate: o.platformDuplicate ?? 0.3, webhookReorder: 0.3, webhookDelayMs: 100 } } } });
  const proxy = await startWebhookProxy([`${h.url()}/webhooks/platform`], { drop: 0.1, duplicate: o.proxyDuplicate ?? 0.8, maxDelayMs: 1500 }, seeded(o.seed ?? 11));
  let deliveries = 0;
  try {
    await h.bot()!.sandbox!.setWebhookUrl(proxy.url);
    const threads: string[] = [];
    for (let i = 0; i < o.loops; i += 1) threads.push((await h.mention({ user: OWNER, text: SEED_MESSAGE, channel: `C0WS${i}` })).ts);
    for (const [i, ts] of threads.entries()) await waitForVerdict(h, ts, 240_000, `C0WS${i}`);
    await proxy.idle();
    await sleep(1000);
    deliveries = proxy.forwarded;
    threads.forEach((ts, i) => checkLoopThread(c, h, ts, `loop ${i + 1}`, `C0WS${i}`));
    c.equal(await sandboxCounts(h.db.db), { runs: 2 * o.loops, trainings: o.loops, datasets: o.loops }, 'sandbox launches');
    const perChat = await launchesPerChat(h.db.db);
    c.equal(perChat.size, o.loops, 'chats with launches');
    for (const [chat, n] of perChat) c.equal(n, { runs: 2, trainings: 1, datasets: 1 }, `chat ${chat}: launches`);
    const triggers = await sql<{ n: string }>`select count(*) as n from triggers where kind in ('platform_event', 'reconcile')`.execute(h.db.db);
    c.equal(Number(triggers.rows[0]!.n), 3 * o.loops, 'event-woken turns');
    c.equal(h.slack.violations, [], 'Slack violations');
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await proxy.stop();
    await h.stop();
  }
  return {
    fault: 'Webhooks duplicated, reordered, delayed, dropped',
    tried: `${o.loops} concurrent loops; sandbox dup ${o.platformDuplicate ?? 0.3}, reorder 0.3, 100 ms delay; proxy drop 0.1, dup x2-4 at ${o.proxyDuplicate ?? 0.8}, delay 0-1.5 s`,
    times: deliveries,
    held: 'every loop finished; exactly one launch per step and one turn per event',
    ms: Date.now() - started,
    failures: c.failures,
    extra: { platformSent: proxy.received, dropped: proxy.dropped },
  };
}

/** Two bot processes on one Postgres, one sandbox, webhooks and Slack events spread across both; one killed mid-turn. */
export async function replicas(o: { loops: number; newDatabase: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const databaseUrl = await o.newDatabase();
  const slack = await startFakeSlack({ teamId: TEAM });
  const slow = loopScript();
  const model = await startScriptedAnthropic((req, ctx) => ({ delayMs: 250, then: slow(req, ctx) as ScriptReply }));
  const token = `sbx_replica_${Date.now()}`;
  const proxy = await startWebhookProxy([], { duplicate: 0.5, drop: 0.1, maxDelayMs: 500 });
  const sandbox = await startSandbox({ databaseUrl, timeScale: 0.01, token, webhookUrl: proxy.url });
  const env = {
    SLACK_BOT_TOKEN: `xoxb-replica-${Date.now()}`,
    SLACK_SIGNING_SECRET: `replica-signing-${Date.now()}`,
    BENCHGEN_API_URL: sandbox.url,
    BENCHGEN_API_TOKEN: sandbox.token,
    BENCHGEN_WEBHOOK_SECRET: sandbox.webhookSecret,
    RECONCILE_OVERDUE_SECONDS: '1',
    RECONCILE_CRON: '* * * * * *',
    WORKER_STALE_SECONDS: '2',
  };
  const shared = { script: slow, mode: 'process' as const, databaseUrl, slack, model, env };
  const a = await startHarness(shared);
  const aWorkers = (await a.db.db.selectFrom('worker_heartbeats').select('worker_id').execute()).map((r) => r.worker_id);
  const b = await startHarness(shared);
  proxy.setTargets([`${a.url()}/webhooks/platform`, `${b.url()}/webhooks/platform`]);
  let killedMidTurn = 0;
  try {
    const threads: string[] = [];
    for (let i = 0; i < o.loops; i += 1) threads.push((await (i % 2 === 0 ? a : b).mention({ user: OWNER, text: SEED_MESSAGE, channel: `C0RP${i}` })).ts);
    const locked = await waitUntil(
      async () => {
        const rows = await sql<{ locked_by: string }>`select locked_by from graphile_worker.jobs where task_identifier = 'run_turn' and locked_by is not null`.execute(a.db.db);
        return rows.rows.some((r) => aWorkers.includes(r.locked_by)) ? true : undefined;
      },
      60_000,
      'a turn running on replica A',
    );
    if (locked) {
      await a.kill();
      killedMidTurn += 1;
    }
    for (const [i, ts] of threads.entries()) await waitForVerdict(b, ts, 120_000, `C0RP${i}`);
    await proxy.idle();
    await sleep(3000);
    threads.forEach((ts, i) => checkLoopThread(c, b, ts, `loop ${i + 1}`, `C0RP${i}`));
    c.equal(await sandboxCounts(b.db.db), { runs: 2 * o.loops, trainings: o.loops, datasets: o.loops }, 'sandbox launches');
    const turns = await sql<{ triggers: string; turns: string; dup: string }>`
      select (select count(*) from triggers) as triggers, (select count(*) from turns) as turns,
             (select count(*) from (select trigger_id from turns group by trigger_id having count(*) > 1) d) as dup`.execute(b.db.db);
    const t = turns.rows[0]!;
    c.equal(Number(t.triggers), 4 * o.loops, 'triggers (one mention + three events per loop)');
    c.equal(Number(t.turns), Number(t.triggers), 'one turn per trigger');
    c.equal(Number(t.dup), 0, 'triggers run twice');
    const undone = await b.db.db.selectFrom('triggers').select('id').where('status', '!=', 'done').execute();
    c.equal(undone.length, 0, 'triggers not done');
    c.equal(slack.violations, [], 'Slack violations');
    c.check((await b.logs()).includes('unlocking jobs of workers that stopped heart-beating'), 'replica B unlocked the dead replica\'s job');
    c.equal([...a.crashes, ...b.crashes], [], 'replica exits the test did not cause');
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await a.stop();
    await b.stop();
    await proxy.stop();
    await sandbox.stop();
    await slack.stop();
    await model.stop();
  }
  return {
    fault: 'Two replicas on one Postgres; one killed mid-turn',
    tried: `${o.loops} loops, mentions alternated, webhooks round-robin (dup 0.5, drop 0.1), sweeps every second on both; SIGKILL replica A while it holds a turn`,
    times: killedMidTurn,
    held: 'every trigger ran exactly once; the other replica finished the turn; no double trigger from the sweeps',
    ms: Date.now() - started,
    failures: c.failures,
  };
}
