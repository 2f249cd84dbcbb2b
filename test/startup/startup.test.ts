// Start-up failures a newcomer meets, seen as they are: `src/main.ts` in a child process (through
// tsx, as `npm start` runs it, where the test says so; else the run's compiled sources).
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

// Each test starts bot processes; on a loaded 2-core machine one start alone can take 20 s.
vi.setConfig({ testTimeout: 150_000 });
import { STARTUP_RETRIES } from '../../src/slack/app.js';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { startFakeSlack, startMiniSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';
import { freePortWithNext } from '../kit/ports.js';
import { baseEnv, logLines, ROOT, runBot } from './run-bot.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** The last line the process printed on stderr-style output, i.e. its verdict on start-up. */
function failureLine(output: string): string {
  const lines = output.split('\n').filter((line) => line.startsWith('Start-up failed:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('start-up failures', () => {
  it('reports every configuration problem in one report, before anything starts', async () => {
    const run = runBot({
      SLACK_BOT_TOKEN: 'xoxb-x',
      SLACK_SIGNING_SECRET: 's',
      PORT: '70000',
      RECONCILE_CRON: 'bad',
      DATABASE_URL: 'localhost:5432/db',
    }, { tsx: true });
    const exit = await run.exited(30_000);
    expect(exit.code).toBe(78);
    const output = run.output();
    for (const variable of ['ANTHROPIC_API_KEY', 'PORT', 'RECONCILE_CRON', 'DATABASE_URL']) {
      expect(output).toMatch(new RegExp(`^  ${variable} `, 'm'));
    }
    expect(output).not.toContain('PostgreSQL');
  });

  it('names DATABASE_URL when the database cannot be reached, with the password hidden', async () => {
    const port = await freePort();
    const run = runBot(baseEnv({ DATABASE_URL: `postgres://bot:hunter2secret@127.0.0.1:${port}/verdict`, PORT: '0' }));
    const exit = await run.exited(30_000);
    expect(exit.code).toBe(1);
    expect(failureLine(run.output())).toBe(
      `Start-up failed: cannot connect to the database at postgres://bot:***@127.0.0.1:${port}/verdict (DATABASE_URL): connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    expect(run.output()).not.toContain('hunter2secret');
  });

  it('names PORT when the port is in use, before the database starts', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '0.0.0.0', resolve));
    cleanups.push(() => new Promise((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as net.AddressInfo).port;
    const run = runBot(baseEnv({ DATABASE_URL: await createTestDatabase('startup'), PORT: String(port) }));
    const exit = await run.exited(30_000);
    expect(exit.code).toBe(1);
    expect(failureLine(run.output())).toBe(`Start-up failed: PORT ${port} is already in use: stop what listens there or set PORT to a free port`);
    expect(run.output()).not.toContain('database:');
  });

  it('gives up on an unreachable Slack in seconds, logging every retry with method, attempt and delay', async () => {
    const slackPort = await freePort();
    const apiUrl = `http://127.0.0.1:${slackPort}/api/`;
    const port = await freePort();
    const run = runBot(baseEnv({ DATABASE_URL: await createTestDatabase('startup'), PORT: String(port), SLACK_API_URL: apiUrl }));
    await run.waitFor('"attempt":1', 40_000);
    const firstRetryAt = Date.now();
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect([health.status, await health.json()]).toEqual([503, { status: 'starting' }]);
    const exit = await run.exited(40_000);
    expect(exit.code).toBe(1);
    // Slack's part: retries after 1, 2 and 4 s (the process's own start, tsx included, comes before).
    expect(Date.now() - firstRetryAt).toBeLessThan(15_000);
    expect(exit.elapsedMs).toBeLessThan(60_000);
    expect(failureLine(run.output())).toBe(
      `Start-up failed: cannot reach Slack at ${apiUrl} to verify SLACK_BOT_TOKEN: connect ECONNREFUSED 127.0.0.1:${slackPort} (check the network, or SLACK_API_URL)`,
    );
    const retries = logLines(run.output()).filter((line) => line.component === 'slack-web-api');
    expect(retries.map((line) => [line.method, line.attempt, line.delayMs])).toEqual([
      ['auth.test', 1, 1000],
      ['auth.test', 2, 2000],
      ['auth.test', 3, 4000],
      ['auth.test', 4, undefined],
    ]);
    expect(retries).toHaveLength(STARTUP_RETRIES.retries + 1);
    expect(run.output()).not.toContain('http request failed');
  });

  it('tells a rejected bot token from a rejected app token', async () => {
    const slack = await startFakeSlack({ teamId: 'T0FAKE', rejectUnknownTokens: true });
    cleanups.push(() => slack.stop());
    const databaseUrl = await createTestDatabase('startup');
    const bad = runBot(baseEnv({ DATABASE_URL: databaseUrl, PORT: '0', SLACK_API_URL: slack.apiUrl }));
    expect((await bad.exited(30_000)).code).toBe(1);
    expect(failureLine(bad.output())).toMatch(/^Start-up failed: Slack rejected SLACK_BOT_TOKEN \(invalid_auth\): copy the Bot User OAuth Token/);

    const botToken = 'xoxb-good-bot-token';
    const mini = await startMiniSlack({ botToken, appToken: 'xapp-1-good-app-token' });
    cleanups.push(() => mini.close());
    const env = baseEnv({ DATABASE_URL: databaseUrl, PORT: '0', SLACK_API_URL: mini.apiUrl, SLACK_BOT_TOKEN: botToken, SLACK_APP_TOKEN: 'xapp-1-wrong' });
    const badApp = runBot(env);
    expect((await badApp.exited(30_000)).code).toBe(1);
    expect(failureLine(badApp.output())).toMatch(/^Start-up failed: Slack rejected SLACK_APP_TOKEN \(invalid_auth\): create an app-level token/);
  });
});

describe('/healthz in Socket Mode', () => {
  it('reports the socket state: ok only while connected', async () => {
    const botToken = 'xoxb-good-bot-token';
    const appToken = 'xapp-1-good-app-token';
    const mini = await startMiniSlack({ botToken, appToken });
    cleanups.push(() => mini.close());
    const port = await freePort();
    const run = runBot(baseEnv({ DATABASE_URL: await createTestDatabase('startup'), PORT: String(port), SLACK_API_URL: mini.apiUrl, SLACK_BOT_TOKEN: botToken, SLACK_APP_TOKEN: appToken }));
    cleanups.push(async () => {
      if (run.child.exitCode === null) {
        run.child.kill('SIGTERM');
        await run.exited(30_000);
      }
    });
    await run.waitFor('"bot ready"', 60_000);
    const health = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      return { status: res.status, body: (await res.json()) as { status: string; slackSocket: string } };
    };
    expect(await health()).toEqual({ status: 200, body: { status: 'ok', slackSocket: 'connected' } });
    mini.setHello(false);
    mini.dropSockets();
    await run.waitFor(/"state":"(reconnecting|disconnected)"/, 10_000);
    const during = await health();
    expect(during.status).toBe(503);
    expect(during.body.status).toMatch(/^slack socket (reconnecting|disconnected|connecting)$/);
    mini.setHello(true);
    mini.dropSockets();
    await run.waitFor(/"state":"connected"[\s\S]*"state":"connected"/, 30_000);
    expect(await health()).toEqual({ status: 200, body: { status: 'ok', slackSocket: 'connected' } });
  });
});

describe('log format', () => {
  it('is human-readable on a terminal and JSON when piped, the database address without its password', async () => {
    const port = await freePort();
    const env = baseEnv({ DATABASE_URL: `postgres://bot:hunter2secret@127.0.0.1:${port}/verdict`, PORT: '0' });
    const piped = runBot(env, { tsx: true });
    await piped.exited(30_000);
    expect(logLines(piped.output()).find((line) => line.msg === 'database: DATABASE_URL')?.database).toBe(`postgres://bot:***@127.0.0.1:${port}/verdict`);

    // script(1) gives the bot a pseudo-terminal as stdout, as a shell in a terminal would.
    const command = `${process.execPath} --import tsx src/main.ts`;
    const tty = spawnSync('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env: { PATH: process.env.PATH!, ...env }, encoding: 'utf8', timeout: 30_000 });
    // eslint-disable-next-line no-control-regex -- colour escapes
    const text = tty.stdout.replace(/\u001b\[[0-9;]*m/g, '');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: database: DATABASE_URL$/m);
    expect(text).toContain(`database: "postgres://bot:***@127.0.0.1:${port}/verdict"`);
    expect(text).not.toMatch(/^\{"level"/m);
    expect(text).not.toContain('hunter2secret');
  });
});

describe('what start-up says', () => {
  it('keeps the sandbox next to PORT, so its links survive a restart', async () => {
    const slack = await startFakeSlack({ teamId: 'T0FAKE' });
    cleanups.push(() => slack.stop());
    const port = await freePortWithNext();
    const env = baseEnv({ DATABASE_URL: await createTestDatabase('startup'), PORT: String(port), SLACK_API_URL: slack.apiUrl });
    const sandboxUrls: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const run = runBot(env);
      await run.waitFor('"bot ready"', 60_000);
      run.child.kill('SIGTERM');
      expect((await run.exited(30_000)).code).toBe(0);
      sandboxUrls.push(String(logLines(run.output()).find((line) => line.msg === 'sandbox platform started in the worker')?.url));
    }
    expect(sandboxUrls).toEqual([`http://127.0.0.1:${port + 1}`, `http://127.0.0.1:${port + 1}`]);
  });

  it('says that BENCHGEN_API_URL without PUBLIC_URL means no webhooks', async () => {
    const slack = await startFakeSlack({ teamId: 'T0FAKE' });
    cleanups.push(() => slack.stop());
    const run = runBot(
      baseEnv({
        DATABASE_URL: await createTestDatabase('startup'),
        PORT: '0',
        SLACK_API_URL: slack.apiUrl,
        BENCHGEN_API_URL: `http://127.0.0.1:${await freePort()}/`,
        BENCHGEN_API_TOKEN: 'platform-token',
        BENCHGEN_WEBHOOK_SECRET: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0',
      }),
    );
    await run.waitFor('"bot ready"', 60_000);
    run.child.kill('SIGTERM');
    await run.exited(30_000);
    const warning = logLines(run.output()).find((line) => line.level === 40 && String(line.msg).startsWith('BENCHGEN_API_URL is set without PUBLIC_URL'));
    expect(warning?.msg).toMatch(/no webhook is registered with the platform, so results arrive only through the reconcile sweep/);
  });
});

describe('.env', () => {
  it('is loaded from the working folder, and the environment wins over it', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-env-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const port = await freePort();
    const env = baseEnv({});
    await writeFile(
      path.join(dir, '.env'),
      [`SLACK_BOT_TOKEN=${env.SLACK_BOT_TOKEN}`, `SLACK_SIGNING_SECRET=${env.SLACK_SIGNING_SECRET}`, 'ANTHROPIC_API_KEY=from-dotenv-key', `DATABASE_URL=postgres://bot:pw@127.0.0.1:${port}/verdict`, 'PORT=70000', ''].join('\n'),
    );
    const run = runBot({ PORT: '0' }, { cwd: dir, tsx: true });
    expect((await run.exited(30_000)).code).toBe(1);
    expect(failureLine(run.output())).toContain(`cannot connect to the database at postgres://bot:***@127.0.0.1:${port}/verdict (DATABASE_URL)`);
  });
});
