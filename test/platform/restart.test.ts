// Crash safety: the sandbox stopped or SIGKILLed mid-run resumes from Postgres; runs finish and webhooks arrive.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../kit/database.js';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { startSandbox } from '@verdict/platform/sandbox/sandbox';
import { verifyWebhook } from '@verdict/contract/webhooks';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { startReceiver, waitFor, waitForRun, type Receiver } from './helpers.js';
import { nodeArgs } from '../kit/compiled.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function eventTypesFor(receiver: Receiver, secret: string, id: string): string[] {
  return receiver.deliveries
    .map((d) => verifyWebhook(secret, d.body, d.headers))
    .filter((e) => e.data.id === id)
    .map((e) => e.type);
}

describe('restart', () => {
  it('a new sandbox on the same database finishes the run and sends the pending webhooks', async () => {
    const databaseUrl = await createTestDatabase('restart');
    const hookPort = await freePort();
    const options = {
      databaseUrl,
      tickIntervalMs: 25,
      webhookUrl: `http://127.0.0.1:${hookPort}/hooks`,
      webhookRetry: { baseDelayMs: 50, maxDelayMs: 100 },
    };
    const first = await startSandbox({ ...options, timeScale: 0.005 });
    let platform = createHttpPlatform({ baseUrl: first.url, token: first.token, retryBaseDelayMs: 20 });
    const finished = await platform.launchRun({ benchmarkId: '666', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, 'restart-1');
    await waitForRun(platform, finished.id);
    await first.stop();

    const second = await startSandbox({ ...options, timeScale: 0.02 });
    cleanups.push(() => second.stop());
    expect(second.token).toBe(first.token);
    expect(second.webhookSecret).toBe(first.webhookSecret);
    platform = createHttpPlatform({ baseUrl: second.url, token: second.token, retryBaseDelayMs: 20 });
    const inFlight = await platform.launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, 'restart-2');
    await second.stop();

    const third = await startSandbox({ ...options, timeScale: 0.02 });
    cleanups.push(() => third.stop());
    const receiver = await startReceiver(hookPort);
    cleanups.push(() => receiver.stop());
    platform = createHttpPlatform({ baseUrl: third.url, token: third.token, retryBaseDelayMs: 20 });
    const done = await waitForRun(platform, inFlight.id);
    expect(done.status).toBe('completed');
    await waitFor(() => eventTypesFor(receiver, third.webhookSecret, finished.id).length > 0);
    await waitFor(() => eventTypesFor(receiver, third.webhookSecret, inFlight.id).length > 0);
    expect(eventTypesFor(receiver, third.webhookSecret, inFlight.id)).toEqual(['run.completed']);
    expect(await platform.getBalance()).toMatchObject({ balanceCredits: 1000 - 1 - 4, reservedCredits: 0 });
  });

  it('survives SIGKILL of the process hosting it mid-run', async () => {
    const databaseUrl = await createTestDatabase('sigkill');
    const port = await freePort();
    const receiver = await startReceiver();
    cleanups.push(() => receiver.stop());
    const env = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      SANDBOX_PORT: String(port),
      SANDBOX_TIME_SCALE: '0.04',
      SANDBOX_WEBHOOK_URL: receiver.url,
    };

    async function launch(): Promise<{ child: ChildProcess; token: string; secret: string }> {
      const child = spawn(process.execPath, await nodeArgs('packages/platform/src/sandbox/cli.ts'), {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      cleanups.push(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      return waitFor(() => {
        if (child.exitCode !== null) throw new Error(`sandbox exited: ${output}`);
        const token = /token:\s+(\S+)/.exec(output)?.[1];
        const secret = /webhook secret:\s+(\S+)/.exec(output)?.[1];
        return token && secret ? { child, token, secret } : undefined;
      }, 30_000);
    }

    const first = await launch();
    const platform = createHttpPlatform({ baseUrl: `http://127.0.0.1:${port}`, token: first.token, retries: 8, retryBaseDelayMs: 100 });
    const run = await platform.launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-1.5B-Instruct' }, 'sigkill-1');
    await waitFor(async () => (await platform.getRun(run.id)).status === 'running');
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;

    const second = await launch();
    expect(second.token).toBe(first.token);
    const done = await waitForRun(platform, run.id, 20_000);
    expect(done).toMatchObject({ status: 'completed', chargedCredits: 8 });
    await waitFor(() => eventTypesFor(receiver, second.secret, run.id).length > 0, 10_000);
    expect(eventTypesFor(receiver, second.secret, run.id)[0]).toBe('run.completed');
    expect((await platform.getBalance()).balanceCredits).toBe(992);
  });
});
