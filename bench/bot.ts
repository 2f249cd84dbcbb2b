// The bot as a child process with IPC (bench/bot-process.ts), started on the fakes.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { fakesEnv, type FakesEnvInput } from '../test/kit/bot-env.js';
import { waitUntil } from '../test/kit/wait.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const TEAM = 'T0FAKE';

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

/**
 * Runs the bot as `npm start` does (`src/main.ts`: a parent with the web and worker roles as child
 * processes), or one role alone with `ROLE` in `env`; resolves once it is ready. `pid` is the
 * parent's (or the role's); its logs go to `logFile`.
 */
export async function spawnMain(env: Record<string, string>, options: { logFile?: string } = {}): Promise<BotProcess> {
  const started = performance.now();
  const logFile = options.logFile ?? path.join(env.DATA_DIR ?? os.tmpdir(), 'bot.log');
  const port = env.PORT && env.PORT !== '0' ? Number(env.PORT) : await freePort();
  // The bot writes its logs straight to the file: piped through this process, every log line of a
  // busy bot (thousands a second with turns running) ran on the load generator's event loop and
  // counted as the bot's latency.
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), NODE_OPTIONS: '' },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const output = async () => readFile(logFile, 'utf8').catch(() => '');
  const readyLine = env.ROLE === 'web' ? '"web role ready"' : env.ROLE === 'worker' ? '"worker role ready"' : '"bot ready"';
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => void output().then((text) => reject(new Error(`bot exited with code ${code}:\n${text.slice(-2000)}`)))),
  );
  exited.catch(() => undefined);
  await Promise.race([waitUntil(async () => (await output()).includes(readyLine), 300_000, readyLine, 100), exited]);
  const readyMs = performance.now() - started;
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    readyMs,
    startBotMs: readyMs,
    request: () => Promise.reject(new Error('spawnMain: no IPC commands')),
    peakRssMb: async () => {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const done = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
        await done;
        clearTimeout(timer);
      }
    },
  };
}
