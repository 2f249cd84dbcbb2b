// The web and worker roles as real processes on one Postgres: `npm start` runs both under one parent,
// each runs alone, the web role runs no turn, a killed worker is restarted while the web role acks,
// and Slack events are stored by group commit (fewer commits than events, no ack before its commit).
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it, vi, afterAll } from 'vitest';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { startSandbox, type SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { generateWebhookSecret } from '@verdict/contract/webhooks';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { startScriptedAnthropic, text, type ScriptedAnthropic } from '../kit/fakes/anthropic/index.js';
import { appMention, sendEvent } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';
import { waitUntil } from '../kit/wait.js';
import { baseEnv, logLines, runBot, type BotRun } from '../startup/run-bot.js';

// Every test starts bot processes; on a loaded 2-core machine one start alone can take 30 s.
vi.setConfig({ testTimeout: 300_000 });

const TEAM = 'T0FAKE';
let slack: FakeSlack | undefined;
let model: ScriptedAnthropic | undefined;
const runs: BotRun[] = [];
const sandboxes: SandboxHandle[] = [];
afterAll(async () => {
  for (const run of runs) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
  for (const sandbox of sandboxes) await sandbox.stop();
  await slack?.stop();
  await model?.stop();
});

async function fakes() {
  slack ??= await startFakeSlack({ teamId: TEAM });
  model ??= await startScriptedAnthropic(() => ({ content: [text('Noted.')] }));
  return { slack, model };
}

function start(env: Record<string, string>): BotRun {
  const run = runBot(env);
  runs.push(run);
  return run;
}

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, ...]; nice is index 16. */
function stat(pid: number): { ppid: number; nice: number } {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(fields[1]), nice: Number(fields[16]) };
}

/** The nice value of every thread of a process (a nice value belongs to a thread on Linux). */
function threadNices(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const text = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function mention(url: string, secret: string, channel: string) {
  const event = appMention({ user: 'UOWNER', text: '<@UBOT> hello', channel, team: TEAM });
  const delivery = await sendEvent(`${url}/slack/events`, secret, event, { teamId: TEAM });
  return { status: delivery.status, dedupeKey: `msg:${channel}:${event.ts as string}` };
}

async function query<T extends pg.QueryResultRow>(databaseUrl: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client(databaseUrl);
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

const COUNTS = `select (select count(*) from triggers)::int as triggers,
  (select count(*) from triggers where status = 'done')::int as done,
  (select count(*) from turns)::int as turns,
  (select count(distinct trigger_id) from turns)::int as distinct_turns,
  (select count(*) from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'run_turn')::int as jobs,
  (select count(*) from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'run_turn' and (j.locked_by is not null or j.attempts > 0))::int as jobs_touched`;
type Counts = { triggers: number; done: number; turns: number; distinct_turns: number; jobs: number; jobs_touched: number };

async function stopRun(run: BotRun): Promise<void> {
  run.child.kill('SIGTERM');
  const exit = await run.exited(90_000);
  expect(exit.code, run.output()).toBe(0);
}

describe('ROLE configuration', () => {
  const env = baseEnv({});
  it('names what a role started alone needs, and refuses an unknown role', () => {
    expect(() => loadConfig({ ...env, ROLE: 'both' })).toThrow(/ROLE must be all .*web .*worker/);
    expect(() => loadConfig({ ...env, ROLE: 'web' })).toThrow(/DATABASE_URL is required with ROLE=web/);
    const withDb = { ...env, DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/verdict' };
    expect(() => loadConfig({ ...withDb, ROLE: 'web' })).toThrow(/BENCHGEN_WEBHOOK_SECRET is required with ROLE=web/);
    expect(() => loadConfig({ ...withDb, ROLE: 'worker' })).toThrow(/BENCHGEN_API_URL is required with ROLE=worker/);
    expect(loadConfig({ ...withDb, ROLE: 'web', BENCHGEN_WEBHOOK_SECRET: 'whsec_c2VjcmV0c2VjcmV0' }).role).toBe('web');
    expect(loadConfig(env).role).toBe('all');
  });
});

describe('npm start: the web and worker roles under one parent', () => {
  it('runs both as child processes, the worker at a lower priority; a killed worker is restarted while the web role keeps acking, nothing lost or doubled', async () => {
    const { slack, model } = await fakes();
    const databaseUrl = await createTestDatabase('roles');
    const port = await freePort();
    const env = baseEnv({ DATABASE_URL: databaseUrl, PORT: String(port), SLACK_API_URL: slack.apiUrl, ANTHROPIC_BASE_URL: model.baseURL, WORKER_STALE_SECONDS: '2', WORKER_CONCURRENCY: '4' });
    const run = start(env);
    await run.waitFor('"bot ready"', 180_000);
    const url = `http://127.0.0.1:${port}`;
    const ready = logLines(run.output()).find((line) => line.msg === 'bot ready') as { pids: { web: number; worker: number }; platform: string };
    const { web, worker } = ready.pids;
    expect(ready.platform).toBe('sandbox');
    expect(new Set([run.child.pid, web, worker]).size).toBe(3);
    expect(stat(web).ppid).toBe(run.child.pid);
    expect(stat(worker).ppid).toBe(run.child.pid);
    expect(stat(worker).nice).toBeGreaterThan(stat(web).nice);

    const first = await mention(url, env.SLACK_SIGNING_SECRET!, 'CROLE0');
    expect(first.status).toBe(200);
    await waitUntil(() => (slack.messages('CROLE0').some((m) => !m.seeded) ? true : undefined), 60_000, 'the first turn to post');

    // Started through `nice`: every thread of the worker (V8's, libuv's, the sandbox's engines) is below the web role's.
    expect(Math.min(...threadNices(worker))).toBeGreaterThan(Math.max(...threadNices(web)));

    process.kill(worker, 'SIGKILL');
    await run.waitFor('the worker role exited (SIGKILL)', 30_000);
    // While no worker runs, the web role still acknowledges, and only after storing.
    const during = [];
    for (let i = 1; i <= 5; i += 1) during.push(await mention(url, env.SLACK_SIGNING_SECRET!, `CROLE${i}`));
    expect(during.map((d) => d.status)).toEqual([200, 200, 200, 200, 200]);
    const stored = await query<{ dedupe_key: string }>(databaseUrl, 'select dedupe_key from triggers where dedupe_key = any($1)', [during.map((d) => d.dedupeKey)]);
    expect(stored).toHaveLength(5);
    expect(alive(web)).toBe(true);

    await run.waitFor('"worker role restarted"', 90_000);
    const restarted = logLines(run.output()).find((line) => line.msg === 'worker role restarted') as { rolePid: number };
    expect(restarted.rolePid).not.toBe(worker);
    expect(stat(restarted.rolePid).ppid).toBe(run.child.pid);
    expect(stat(restarted.rolePid).nice).toBeGreaterThan(stat(web).nice);

    const counts = await waitUntil(
      async () => {
        const [c] = await query<Counts>(databaseUrl, COUNTS);
        return c!.done === 6 && c!.jobs === 0 ? c : undefined;
      },
      120_000,
      'every mention to run its turn',
    );
    expect(counts).toMatchObject({ triggers: 6, done: 6, turns: 6, distinct_turns: 6 });
    for (let i = 0; i <= 5; i += 1) expect(slack.messages(`CROLE${i}`).filter((m) => !m.seeded), `CROLE${i}`).toHaveLength(1);

    await stopRun(run);
    expect(alive(web)).toBe(false);
    expect(alive(restarted.rolePid)).toBe(false);
  });
});

describe('roles started alone on one Postgres', () => {
  it('the web role stores and acks but runs no turn; a worker started beside it runs them', async () => {
    const { slack, model } = await fakes();
    const databaseUrl = await createTestDatabase('roles');
    const sandbox = await startSandbox({ databaseUrl, timeScale: 0.01 });
    sandboxes.push(sandbox);
    const port = await freePort();
    const env = baseEnv({ DATABASE_URL: databaseUrl, SLACK_API_URL: slack.apiUrl, ANTHROPIC_BASE_URL: model.baseURL, BENCHGEN_WEBHOOK_SECRET: sandbox.webhookSecret });
    const web = start({ ...env, ROLE: 'web', PORT: String(port) });
    await web.waitFor('"web role ready"', 180_000);
    const url = `http://127.0.0.1:${port}`;
    const acks = [];
    for (let i = 0; i < 3; i += 1) acks.push(await mention(url, env.SLACK_SIGNING_SECRET!, `CALONE${i}`));
    expect(acks.map((a) => a.status)).toEqual([200, 200, 200]);
    // Long enough for a worker in this process to have taken the jobs (it is woken by LISTEN/NOTIFY at once).
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const [idle] = await query<Counts>(databaseUrl, COUNTS);
    expect(idle).toMatchObject({ triggers: 3, done: 0, turns: 0, jobs: 3, jobs_touched: 0 });
    expect(slack.messages('CALONE0').filter((m) => !m.seeded)).toHaveLength(0);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const worker = start({ ...env, ROLE: 'worker', PORT: '0', BENCHGEN_API_URL: sandbox.url, BENCHGEN_API_TOKEN: sandbox.token });
    await worker.waitFor('"worker role ready"', 180_000);
    // Started alone, a role keeps the priority it was started with: its deployment decides.
    expect(stat(worker.child.pid!).nice).toBe(stat(process.pid).nice);
    const counts = await waitUntil(
      async () => {
        const [c] = await query<Counts>(databaseUrl, COUNTS);
        return c!.done === 3 && c!.jobs === 0 ? c : undefined;
      },
      120_000,
      'the worker to run the turns',
    );
    expect(counts).toMatchObject({ triggers: 3, turns: 3, distinct_turns: 3 });
    for (let i = 0; i < 3; i += 1) expect(slack.messages(`CALONE${i}`).filter((m) => !m.seeded)).toHaveLength(1);
    await stopRun(web);
    await stopRun(worker);
    expect(logLines(web.output()).some((line) => line.msg === 'stopped')).toBe(true);
  });
});

describe('Slack ingest by group commit', () => {
  it('a burst of N signed mentions: N triggers and jobs in fewer than N commits, and no ack before its commit', async () => {
    const { slack, model } = await fakes();
    const databaseUrl = await createTestDatabase('roles');
    const env = baseEnv({ DATABASE_URL: databaseUrl, SLACK_API_URL: slack.apiUrl, ANTHROPIC_BASE_URL: model.baseURL, BENCHGEN_WEBHOOK_SECRET: generateWebhookSecret() });
    const N = 60;
    const startWeb = async () => {
      const port = await freePort();
      const web = start({ ...env, ROLE: 'web', PORT: String(port), LOG_LEVEL: 'debug' });
      await web.waitFor('"web role ready"', 180_000);
      return { web, url: `http://127.0.0.1:${port}` };
    };
    const xactCommit = async () =>
      Number((await query<{ n: string }>(databaseUrl, 'select xact_commit as n from pg_stat_database where datname = current_database()'))[0]!.n);

    // Commits: every flush of the group committer is one statement, i.e. one transaction (the web role
    // logs each at debug); Postgres's own count of this database's commits over the burst is at least that.
    // The web role alone is the only client of this database during the burst, and it is stopped
    // before the count is read, so its connections' statistics are flushed.
    const first = await startWeb();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const before = await xactCommit();
    const burst = await Promise.all(Array.from({ length: N }, (_, i) => mention(first.url, env.SLACK_SIGNING_SECRET!, `CBURST${i}`)));
    expect(burst.every((b) => b.status === 200)).toBe(true);
    await stopRun(first.web);
    // The reading above is itself one committed transaction, counted once its connection closed.
    const commits = (await xactCommit()) - before - 1;
    const [afterBurst] = await query<Counts>(databaseUrl, COUNTS);
    expect(afterBurst).toMatchObject({ triggers: N, jobs: N, turns: 0 });
    const statements = logLines(first.web.output()).filter((line) => line.msg === 'slack ingest: one statement').map((line) => line.events as number);
    console.log(`[group commit] ${N} concurrent mentions: ${statements.length} statements ${JSON.stringify(statements)}; Postgres counted ${commits} commits in the database meanwhile`);
    expect(statements.reduce((a, b) => a + b, 0)).toBe(N);
    expect(statements.length).toBeLessThan(N);
    expect(commits).toBeGreaterThanOrEqual(statements.length);

    // Durability: at the moment each ack arrives, its trigger is already committed (visible to another connection).
    const second = await startWeb();
    // A pool, so each check runs as its ack arrives rather than queued behind the others on one connection.
    const checker = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    const missingAtAck: string[] = [];
    await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const ack = await mention(second.url, env.SLACK_SIGNING_SECRET!, `CDURABLE${i}`);
        expect(ack.status).toBe(200);
        const found = await checker.query('select 1 from triggers where dedupe_key = $1', [ack.dedupeKey]);
        if (found.rowCount !== 1) missingAtAck.push(ack.dedupeKey);
      }),
    );
    await checker.end();
    expect(missingAtAck).toEqual([]);
    await stopRun(second.web);
    const [final] = await query<Counts>(databaseUrl, COUNTS);
    expect(final).toMatchObject({ triggers: 2 * N, jobs: 2 * N, turns: 0 });
  });
});
