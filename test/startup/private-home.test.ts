// `npm start` as root in a checkout the `postgres` user cannot reach (a clone in /root, mode 0700):
// with no setting the embedded database goes to a folder of this checkout's own under
// /var/lib/verdict-bot, the log says where in one line, and a second start finds the same data.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';

// Each test starts bot processes; on a loaded 2-core machine one start alone can take 20 s.
vi.setConfig({ testTimeout: 150_000 });
import { checkoutFolderName, SYSTEM_DATA_ROOT } from '@verdict/runtime/embedded-postgres';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { baseEnv, logLines, runBot, type BotRun } from './run-bot.js';

const asRoot = process.getuid?.() === 0;
if (!asRoot) console.log('private-home.test: needs root (the embedded PostgreSQL then runs as the postgres user, which cannot enter a 0700 folder); skipped');

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/** A checkout inside a private (0700) folder, as a clone in /root is; `npm start` runs from it. */
async function privateCheckout(): Promise<{ home: string; checkout: string }> {
  const home = await mkdtemp(path.join(os.tmpdir(), 'verdict-private-home-'));
  await chmod(home, 0o700);
  cleanups.push(() => rm(home, { recursive: true, force: true }));
  const checkout = path.join(home, 'verdict-bot');
  await mkdir(checkout, { mode: 0o755 });
  return { home, checkout };
}

async function stopBot(run: BotRun): Promise<void> {
  run.child.kill('SIGTERM');
  expect((await run.exited(60_000)).code).toBe(0);
}

/** The bot's embedded database, from its log line (the password is the embedded server's fixed one). */
function databaseUrl(output: string): string {
  const line = logLines(output).find((l) => l.msg === 'database: embedded PostgreSQL');
  expect(line, output).toBeDefined();
  return String(line!.database).replace(':***@', ':postgres@');
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(!asRoot)('npm start as root in a private (0700) home', () => {
  let slack: FakeSlack;

  it('keeps the embedded database in a folder of the checkout under /var/lib/verdict-bot, found again by the next start', async () => {
    slack = await startFakeSlack({ teamId: 'T0FAKE' });
    cleanups.push(() => slack.stop());
    const { home, checkout } = await privateCheckout();
    const rootExisted = existsSync(SYSTEM_DATA_ROOT);
    const place = path.join(SYSTEM_DATA_ROOT, checkoutFolderName(checkout));
    cleanups.push(async () => {
      await rm(place, { recursive: true, force: true });
      if (!rootExisted && (await readdir(SYSTEM_DATA_ROOT)).length === 0) await rmdir(SYSTEM_DATA_ROOT);
    });
    const env = baseEnv({ PORT: '0', SLACK_API_URL: slack.apiUrl });

    const first = runBot(env, { cwd: checkout });
    await first.waitFor('"bot ready"', 120_000);
    const placeLines = logLines(first.output()).filter((l) => String(l.msg).startsWith('no DATABASE_URL'));
    expect(placeLines.map((l) => l.msg)).toEqual([
      `no DATABASE_URL: starting embedded PostgreSQL with its data in ${place}/postgres, as the "postgres" user it runs as cannot enter ${home} (mode 0700); set DATA_DIR to keep it elsewhere`,
    ]);
    expect(existsSync(path.join(place, 'postgres', 'PG_VERSION'))).toBe(true);
    expect(readFileSync(path.join(place, 'checkout'), 'utf8')).toBe(`${checkout}\n`);
    await query(databaseUrl(first.output()), `create table private_home_marker (note text); insert into private_home_marker values ('first start')`);
    await stopBot(first);

    const second = runBot(env, { cwd: checkout });
    await second.waitFor('"bot ready"', 120_000);
    expect(logLines(second.output()).filter((l) => String(l.msg).startsWith('no DATABASE_URL')).map((l) => l.msg)).toEqual(placeLines.map((l) => l.msg));
    expect(await query<{ note: string }>(databaseUrl(second.output()), 'select note from private_home_marker')).toEqual([{ note: 'first start' }]);
    await stopBot(second);

    // The user's folders keep their modes; nothing of the database was put inside the checkout.
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(statSync(checkout).mode & 0o777).toBe(0o755);
    expect(existsSync(path.join(checkout, '.data', 'postgres'))).toBe(false);
  });

  it('uses DATA_DIR as set, even there: one line saying the postgres user cannot enter it', async () => {
    slack ??= await startFakeSlack({ teamId: 'T0FAKE' });
    const { home, checkout } = await privateCheckout();
    const run = runBot(baseEnv({ PORT: '0', SLACK_API_URL: slack.apiUrl, DATA_DIR: path.join(checkout, 'data') }), { cwd: checkout });
    expect((await run.exited(60_000)).code).toBe(1);
    const failures = run.output().split('\n').filter((line) => line.startsWith('Start-up failed:'));
    expect(failures).toEqual([
      `Start-up failed: embedded PostgreSQL runs as the "postgres" user (it refuses to run as root), which cannot enter ${home} (mode 0700): set DATA_DIR to a folder it can reach (e.g. DATA_DIR=/var/lib/verdict-bot), set DATABASE_URL, or run the bot as a non-root user`,
    ]);
    expect(existsSync(path.join(SYSTEM_DATA_ROOT, checkoutFolderName(path.join(checkout))))).toBe(false);
  });
});
