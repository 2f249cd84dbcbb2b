// Runs `src/main.ts` as a child process with a given environment and collects its output, for
// start-up and shutdown tests: the run's compiled sources (test/kit/compiled.ts), or through tsx.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { compiledBotEntry } from '../kit/compiled.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export interface BotRun {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once the process ends, rejects after `timeoutMs`. */
  exited(timeoutMs: number): Promise<{ code: number | null; signal: string | null; elapsedMs: number }>;
  waitFor(text: string | RegExp, timeoutMs: number): Promise<void>;
}

/** A minimal bot environment (HTTP mode); tests add or override variables. */
export function baseEnv(extra: Record<string, string>): Record<string, string> {
  return {
    SLACK_BOT_TOKEN: `xoxb-test-${randomBytes(6).toString('hex')}`,
    SLACK_SIGNING_SECRET: randomBytes(16).toString('hex'),
    ANTHROPIC_API_KEY: `test-key-${randomBytes(6).toString('hex')}`,
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/',
    SANDBOX_TIME_SCALE: '0.01',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

// The bot compiled for this test run, when there is one.
const compiledMain = await compiledBotEntry();

/**
 * Runs the bot: `entry` (compiled JavaScript, absolute or relative to the repository) with plain
 * node; by default the run's compiled `src/main.ts`; `tsx: true` (or no compiled sources) runs
 * `src/main.ts` through tsx, as `npm start` does.
 */
export function runBot(env: Record<string, string>, options: { cwd?: string; detached?: boolean; entry?: string; tsx?: boolean } = {}): BotRun {
  const started = Date.now();
  // Only what a shell would pass: no variable from the test runner's own environment leaks in.
  const inherited = Object.fromEntries(
    ['PATH', 'HOME', 'TMPDIR', 'LANG'].filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]),
  );
  // tsx by its file URL: the bot may run in another folder (a .env there), where 'tsx' would not resolve.
  const entry = options.entry ?? (options.tsx ? undefined : compiledMain);
  const args = entry
    ? ['--enable-source-maps', path.resolve(ROOT, entry)]
    : ['--import', pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href, path.join(ROOT, 'src/main.ts')];
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exit = new Promise<{ code: number | null; signal: string | null; elapsedMs: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, elapsedMs: Date.now() - started })),
  );
  return {
    child,
    output: () => output,
    exited: (timeoutMs) =>
      Promise.race([
        exit,
        new Promise<never>((_, reject) =>
          setTimeout(() => {
            child.kill('SIGKILL');
            reject(new Error(`the bot did not exit within ${timeoutMs} ms; output:\n${output}`));
          }, timeoutMs).unref(),
        ),
      ]),
    waitFor: async (text, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (!(typeof text === 'string' ? output.includes(text) : text.test(output))) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the bot exited before printing ${String(text)}; output:\n${output}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(text)}; output:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/** JSON log lines of a run (non-JSON lines skipped). */
export function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
