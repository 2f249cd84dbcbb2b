// Shared bench helpers: own embedded Postgres, bot child process with IPC, fakes' env, load, statistics.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { EmbeddedDatabase } from '../src/store/embedded-postgres.js';
import { fakesEnv, type FakesEnvInput } from '../test/kit/bot-env.js';
import { createDatabaseOn, startPrivatePostgres } from '../test/kit/database.js';
import { sleep } from '../test/kit/wait.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const TEAM = 'T0FAKE';

/** Reads a numeric setting from the environment (BENCH_*), with a default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`${name} must be a number`);
  return value;
}

// ------------------------------------------------------------------ statistics

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

export const median = (values: readonly number[]) => quantile(values, 0.5);

export const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));

// ------------------------------------------------------------------ postgres

export interface BenchPostgres {
  server: EmbeddedDatabase;
  dir: string;
  /** CPU milliseconds used so far by the Postgres server: postmaster, live backends and reaped ones. */
  cpuMs(): Promise<number>;
  /** A fresh empty database, by URL. */
  createDatabase(prefix: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts this bench's own embedded PostgreSQL in a temporary folder. */
export async function startPostgres(): Promise<BenchPostgres> {
  const postgres = await startPrivatePostgres({ folderPrefix: 'verdict-bench-pg-' });
  const { server, dir } = postgres;
  return {
    server,
    dir,
    cpuMs: async () => {
      const pid = Number((await readFile(path.join(postgres.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      let total = await processCpuMs(pid, true);
      for (const entry of await readdir('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
        if (stat && Number(statFields(stat)[1]) === pid) total += await processCpuMs(Number(entry));
      }
      return total;
    },
    createDatabase: (prefix) => createDatabaseOn(server.url, prefix),
    stop: postgres.stop,
  };
}

// ------------------------------------------------------------------ the bot

/** Environment of a bot pointed at the fakes (the e2e harness's defaults, eight turns at a time). */
export function botEnv(input: FakesEnvInput, extra: Record<string, string> = {}): Record<string, string> {
  return { ...fakesEnv(input), WORKER_CONCURRENCY: '8', ...extra };
}

export interface BotProcess {
  child: ChildProcess;
  url: string;
  pid: number;
  /** Milliseconds from spawn to the bot's ready message. */
  readyMs: number;
  /** Milliseconds startBot() itself took, measured inside the child. */
  startBotMs: number;
  request<T = unknown>(command: string): Promise<T>;
  /** Peak resident set (VmHWM) of the bot process, in MB. */
  peakRssMb(): Promise<number>;
  stop(): Promise<void>;
}

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, ...]; utime is index 11. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU milliseconds (user + system) of a process; with `children`, also of its reaped children. */
export async function processCpuMs(pid: number, children = false): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!stat) return 0;
  const f = statFields(stat).map(Number);
  const ticks = f[11]! + f[12]! + (children ? f[13]! + f[14]! : 0);
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Kernel clock ticks per second (USER_HZ), 100 on Linux. */
const CLOCK_TICKS = 100;

/** Runs bench/bot-process.ts (startBot in a child process; or `script`); logs go to `logFile`. */
export async function spawnBot(env: Record<string, string>, options: { logFile?: string; pollIntervalMs?: number; nodeArgs?: string[]; script?: string } = {}): Promise<BotProcess> {
  const started = performance.now();
  const logFile = options.logFile ?? path.join(env.DATA_DIR ?? os.tmpdir(), 'bot.log');
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', path.join(ROOT, options.script ?? 'bench/bot-process.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env, NODE_OPTIONS: '', BENCH_LOG_FILE: logFile, BENCH_POLL_MS: String(options.pollIntervalMs ?? 500) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (value: unknown) => void>();
  let seq = 0;
  let ready: ((m: { url: string; startBotMs: number }) => void) | undefined;
  let failed: ((e: Error) => void) | undefined;
  child.on('message', (raw) => {
    const m = raw as { type: string; id?: number; value?: unknown; url?: string; startBotMs?: number; error?: string };
    if (m.type === 'ready') ready?.({ url: m.url!, startBotMs: m.startBotMs! });
    else if (m.type === 'failed') failed?.(new Error(`bot failed to start: ${m.error}`));
    else if (m.type === 'reply' && m.id !== undefined) pending.get(m.id)?.(m.value);
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`bot exited with code ${code}`))));
  exited.catch(() => undefined);
  const info = await Promise.race([
    new Promise<{ url: string; startBotMs: number }>((resolve, reject) => {
      ready = resolve;
      failed = reject;
    }),
    exited,
  ]);
  const readyMs = performance.now() - started;
  const request = <T>(command: string) =>
    new Promise<T>((resolve) => {
      const id = ++seq;
      pending.set(id, (v) => {
        pending.delete(id);
        resolve(v as T);
      });
      child.send({ type: 'command', id, command });
    });
  return {
    child,
    url: info.url,
    pid: child.pid!,
    readyMs,
    startBotMs: info.startBotMs,
    request,
    peakRssMb: async () => {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
      return kb / 1024;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const done = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await done;
      clearTimeout(timer);
    },
  };
}

// ------------------------------------------------------------------ load

export const keepAliveAgent = (maxSockets = 256) => new http.Agent({ keepAlive: true, maxSockets });

export interface PostResult {
  status: number;
  ms: number;
  body: string;
}

/** POSTs a body over a keep-alive agent and times the full answer. */
export function post(agent: http.Agent, url: string, body: string, headers: Record<string, string>): Promise<PostResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: 0, ms: performance.now() - started, body: '' }));
    });
    req.on('error', (e) => resolve({ status: 0, ms: performance.now() - started, body: String(e) }));
    req.end(body);
  });
}

/** Open-loop load: calls `fire(i)` at `rate` per second for `durationMs`, whatever the answers' latency. */
export async function openLoop(rate: number, durationMs: number, fire: (i: number) => Promise<void>): Promise<{ sent: number; maxLagMs: number }> {
  const total = Math.round((rate * durationMs) / 1000);
  const interval = 1000 / rate;
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  let maxLagMs = 0;
  for (let i = 0; i < total; i += 1) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    maxLagMs = Math.max(maxLagMs, performance.now() - due);
    inflight.push(fire(i));
  }
  await Promise.all(inflight);
  return { sent: total, maxLagMs };
}

/** A Slack channel id for loop `i` (each loop its own channel, so per-channel pacing never couples them). */
export const channelFor = (i: number) => `CB${i.toString(36).toUpperCase().padStart(6, '0')}`;

/** Prints a figure line the docs quote. */
export function report(label: string, value: string): void {
  console.log(`  ${label.padEnd(48)} ${value}`);
}

/** True when this module is the script node was started with (not imported by bench/index.ts). */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && path.resolve(process.argv[1]) === new URL(moduleUrl).pathname;
}
