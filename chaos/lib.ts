// Shared pieces of the reliability scenarios: figures, checks, counts, a webhook proxy and databases.
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chmod } from 'node:fs/promises';
import { sql } from 'kysely';
import pg from 'pg';
import type { Db } from '../src/store/db.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/store/embedded-postgres.js';
import { waitUntil, type Harness } from '../test/kit/harness.js';

export interface Figure {
  fault: string;
  tried: string;
  times: number;
  held: string;
  ms: number;
  failures: string[];
  extra?: Record<string, number | string>;
}

export type NewDatabase = () => Promise<string>;

export class Checks {
  readonly failures: string[] = [];
  check(condition: unknown, message: string): void {
    if (!condition) this.failures.push(message);
  }
  equal(actual: unknown, expected: unknown, message: string): void {
    const a = JSON.stringify(actual);
    const e = JSON.stringify(expected);
    if (a !== e) this.failures.push(`${message}: got ${a}, expected ${e}`);
  }
}

export function printFigure(figure: Figure): Figure {
  const extra = figure.extra ? ` ${Object.entries(figure.extra).map(([k, v]) => `${k}=${v}`).join(' ')}` : '';
  console.log(
    `[reliability] ${figure.fault} | ${figure.tried} | x${figure.times} | ${figure.failures.length === 0 ? 'HELD' : 'FAILED'}: ${figure.held} | ${(figure.ms / 1000).toFixed(1)} s${extra}${figure.failures.length ? ` | ${figure.failures.slice(0, 5).join('; ')}` : ''}`,
  );
  return figure;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rejects when `promise` has not settled within `ms`, naming what was awaited. */
export function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A seeded PRNG (mulberry32), so a run's random points can be replayed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export { sandboxCounts, type SandboxCounts } from '../test/kit/harness.js';

export function isVerdict(post: { blocks?: unknown[] }): boolean {
  return JSON.stringify(post.blocks ?? []).includes('"type":"table"');
}

export async function waitForVerdict(h: Harness, threadTs: string, timeoutMs = 60_000, channel?: string) {
  return waitUntil(() => h.posts(threadTs, channel).find(isVerdict), timeoutMs, `the comparison message in ${threadTs}`);
}

/** Per-thread checks of the full loop: four posts (three launch reports and the verdict), no duplicates, in order. */
export function checkLoopThread(c: Checks, h: Harness, threadTs: string, label: string, channel?: string): void {
  const failuresBefore = c.failures.length;
  const posts = h.posts(threadTs, channel);
  c.equal(posts.length, 4, `${label}: posts in the thread`);
  const keys = posts.map((p) => (p.metadata?.event_payload as { post_key?: string } | undefined)?.post_key ?? p.ts);
  c.equal(new Set(keys).size, keys.length, `${label}: distinct post keys`);
  c.check(/Launched run/.test(posts[0]?.text ?? ''), `${label}: first post is the baseline launch`);
  c.check(/Launched LoRA training/.test(posts[1]?.text ?? ''), `${label}: second post is the training launch`);
  c.check(/Launched run/.test(posts[2]?.text ?? ''), `${label}: third post is the trained-run launch`);
  c.check(posts[3] !== undefined && isVerdict(posts[3]), `${label}: fourth post is the verdict`);
  if (c.failures.length > failuresBefore) {
    c.check(false, `${label}: the thread as posted: ${JSON.stringify(posts.map((p) => p.text.slice(0, 100)))}`);
  }
}

/** Launches per chat recorded by the bot: exactly two runs and one training per finished loop. */
export async function launchesPerChat(db: Db): Promise<Map<string, { runs: number; trainings: number; datasets: number }>> {
  const rows = await db.selectFrom('resources').select(['chat_id', 'kind']).where('kind', 'in', ['run', 'training', 'dataset']).execute();
  const out = new Map<string, { runs: number; trainings: number; datasets: number }>();
  for (const row of rows) {
    const entry = out.get(row.chat_id) ?? { runs: 0, trainings: 0, datasets: 0 };
    if (row.kind === 'run') entry.runs += 1;
    else if (row.kind === 'training') entry.trainings += 1;
    else entry.datasets += 1;
    out.set(row.chat_id, entry);
  }
  return out;
}

export interface WebhookProxy {
  url: string;
  /** Deliveries received from the platform, and copies sent on to the bot(s). */
  received: number;
  forwarded: number;
  dropped: number;
  statuses: Map<number, number>;
  setTargets(targets: string[]): void;
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export interface ProxyFaults {
  /** Share of deliveries swallowed (answered 200, never forwarded). */
  drop?: number;
  /** Share of deliveries forwarded 2-4 times. */
  duplicate?: number;
  /** Copies wait up to this long before being forwarded (so later events overtake earlier ones). */
  maxDelayMs?: number;
}

/**
 * A hostile network between the platform and the bot: forwards webhook deliveries round-robin to
 * the targets, dropping, duplicating, delaying and so reordering them.
 */
export async function startWebhookProxy(targets: string[], faults: ProxyFaults = {}, random = seeded(7)): Promise<WebhookProxy> {
  let list = [...targets];
  let next = 0;
  const pending = new Set<Promise<void>>();
  const proxy: WebhookProxy = {
    url: '',
    received: 0,
    forwarded: 0,
    dropped: 0,
    statuses: new Map(),
    setTargets: (t) => {
      list = [...t];
    },
    idle: async () => {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    stop: async () => undefined,
  };
  const forward = async (body: Buffer, headers: Record<string, string>, delayMs: number) => {
    if (delayMs > 0) await sleep(delayMs);
    for (let tries = 0; tries < list.length * 2; tries += 1) {
      const target = list[next++ % list.length]!;
      try {
        const res = await fetch(target, { method: 'POST', body, headers });
        await res.arrayBuffer();
        proxy.forwarded += 1;
        proxy.statuses.set(res.status, (proxy.statuses.get(res.status) ?? 0) + 1);
        if (res.status < 500) return;
      } catch {
        // a dead replica: try the next one
      }
    }
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      proxy.received += 1;
      const body = Buffer.concat(chunks);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const v = req.headers[name];
        if (typeof v === 'string') headers[name] = v;
      }
      if (random() < (faults.drop ?? 0)) {
        proxy.dropped += 1;
        res.writeHead(200).end('{}');
        return;
      }
      const copies = random() < (faults.duplicate ?? 0) ? 2 + Math.floor(random() * 3) : 1;
      for (let i = 0; i < copies; i += 1) {
        const p = forward(body, headers, Math.floor(random() * (faults.maxDelayMs ?? 0))).finally(() => pending.delete(p));
        pending.add(p);
      }
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/platform`;
  proxy.stop = async () => {
    await proxy.idle();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  return proxy;
}

/** A private embedded PostgreSQL server in a temporary folder (chaos scripts, or a server a test may restart). */
export async function startPrivatePostgres(port?: number): Promise<{ server: EmbeddedDatabase; dataDir: string; newDatabase: NewDatabase }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-chaos-pg-'));
  await chmod(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const server = await startEmbeddedPostgres({ dataDir, ...(port ? { port } : {}) });
  return { server, dataDir, newDatabase: () => createDatabaseOn(server.url) };
}

export async function createDatabaseOn(adminUrl: string, prefix = 'chaos'): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client(adminUrl);
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs a full-variant chaos script: a private Postgres, the scenario, the figure, exit code. */
export async function runChaos(scenario: (newDatabase: NewDatabase) => Promise<Figure>): Promise<void> {
  const pgServer = await startPrivatePostgres();
  let failed = true;
  try {
    const figure = printFigure(await scenario(pgServer.newDatabase));
    failed = figure.failures.length > 0;
    if (failed) for (const f of figure.failures) console.error(`  - ${f}`);
  } finally {
    await pgServer.server.stop();
  }
  process.exit(failed ? 1 : 0);
}

/** The bot's job, trigger, post and connection state, for the report of a scenario that stalled. */
export async function stateDump(db: Db): Promise<string> {
  const q = async (label: string, query: ReturnType<typeof sql>) => {
    try {
      const { rows } = await query.execute(db);
      return `${label}: ${JSON.stringify(rows)}`;
    } catch (error) {
      return `${label}: (${(error as Error).message})`;
    }
  };
  const parts = await Promise.all([
    q('jobs', sql`select j.id, t.identifier as task, q.queue_name, j.locked_by, j.attempts, j.max_attempts,
        round(extract(epoch from (j.run_at - now()))::numeric, 1) as run_in_s, left(j.last_error, 120) as last_error, j.key
      from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
      left join graphile_worker._private_job_queues q on q.id = j.job_queue_id order by j.id`),
    q('queues', sql`select queue_name, locked_by, locked_at from graphile_worker._private_job_queues where locked_by is not null`),
    q('heartbeats', sql`select worker_id, process_id, round(extract(epoch from (now() - last_seen))::numeric, 1) as age_s from worker_heartbeats`),
    q('triggers', sql`select id, kind, status, left(error, 80) as error from triggers order by id`),
    q('posts', sql`select id, post_key, status, attempts, slack_ts is not null as delivered from posts order by id`),
    q('activity', sql`select pid, state, wait_event_type, wait_event, round(extract(epoch from (now() - xact_start))::numeric, 1) as xact_s, left(query, 100) as query
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`),
  ]);
  return parts.join('\n');
}
