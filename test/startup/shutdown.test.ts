// Ctrl-C (SIGINT to the whole process group, as a terminal sends it) and SIGTERM at any moment:
// the bot stops its worker, HTTP and pool, then its embedded Postgres, in a few calm lines.
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

// Each test starts bot processes; on a loaded 2-core machine one start alone can take 20 s.
vi.setConfig({ testTimeout: 150_000 });
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { baseEnv, logLines, runBot } from './run-bot.js';

let slack: FakeSlack | undefined;
const dirs: string[] = [];
afterAll(async () => {
  await slack?.stop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function botWithEmbeddedPostgres() {
  slack ??= await startFakeSlack({ teamId: 'T0FAKE' });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-stop-'));
  await chmod(dir, 0o755);
  dirs.push(dir);
  // detached: the bot leads its own process group, so -pid reaches everything a terminal's Ctrl-C would.
  const run = runBot(baseEnv({ DATA_DIR: dir, PORT: '0', SLACK_API_URL: slack.apiUrl, RECONCILE_CRON: '*/2 * * * * *', WORKER_CONCURRENCY: '4' }), { detached: true });
  return { run, pidFile: path.join(dir, 'postgres', 'postmaster.pid') };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** What the bot printed once asked to stop: a few lines, no lost connection, no failed step. */
function expectCalmStop(output: string) {
  const after = output.slice(output.indexOf('"shutting down"'));
  const lines = after.split('\n').filter(Boolean);
  expect(lines.length, after).toBeLessThanOrEqual(4);
  expect(output).not.toContain('database connection lost');
  expect(output).not.toContain('shutdown step failed');
  expect(output).not.toContain('terminating connection');
  expect(logLines(output).some((line) => line.msg === 'stopped')).toBe(true);
}

describe('stopping the bot', () => {
  it.each([
    ['Ctrl-C to the process group', 'SIGINT'],
    ['SIGTERM', 'SIGTERM'],
  ] as const)('%s right after "bot ready" stops the embedded database last', async (_, signal) => {
    const { run, pidFile } = await botWithEmbeddedPostgres();
    await run.waitFor('"bot ready"', 90_000);
    const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (signal === 'SIGINT') process.kill(-run.child.pid!, 'SIGINT');
    else run.child.kill('SIGTERM');
    const exit = await run.exited(40_000);
    expect(exit.code, run.output()).toBe(0);
    expectCalmStop(run.output());
    expect(alive(postmaster)).toBe(false);
    expect(existsSync(pidFile)).toBe(false);
  });

  it('Ctrl-C during start-up lets the start finish, then stops cleanly', async () => {
    const { run, pidFile } = await botWithEmbeddedPostgres();
    await run.waitFor('"database: embedded PostgreSQL"', 90_000);
    process.kill(-run.child.pid!, 'SIGINT');
    const exit = await run.exited(60_000);
    expect(exit.code, run.output()).toBe(0);
    expect(run.output()).toContain('SIGINT received during start-up: stopping as soon as the start finishes');
    expectCalmStop(run.output());
    expect(existsSync(pidFile)).toBe(false);
  });
});
