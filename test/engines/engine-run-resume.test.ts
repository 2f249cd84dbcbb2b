// A platform SIGKILLed mid-run on a real engine resumes on start: no stored answer is asked again (requests counted at the engine).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { verifyWebhook } from '@verdict/contract/webhooks';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { createTestDatabase } from '../kit/database.js';
import { startFakeOpenAi } from '../kit/fakes/openai-faults.js';
import { startReceiver, waitFor, waitForRun } from '../platform/helpers.js';
import { nodeArgs } from '../kit/compiled.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const N = 30;
const CONCURRENCY = 3;
const items = Array.from({ length: N }, (_, i) => ({ id: `s${i + 1}`, question: `Tell story ${i + 1}`, answer: `story ${i + 1}` }));

describe('engine run resume', () => {
  it('a run killed with SIGKILL resumes on the next start and asks no stored question twice', async () => {
    const fake = await startFakeOpenAi({ models: [{ id: 'tiny', chat_template: false }], latencyMs: 120 });
    fake.answer = (prompt) => prompt.replace('Tell ', '');
    const receiver = await startReceiver();
    const databaseUrl = await createTestDatabase('engine_resume');
    const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    const benchmarksDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
    fs.writeFileSync(path.join(benchmarksDir, 'stories-30.jsonl'), items.map((i) => JSON.stringify(i)).join('\n') + '\n');
    cleanups.push(() => fake.close(), () => receiver.stop(), () => db.end(), () => fs.rmSync(benchmarksDir, { recursive: true, force: true }));
    const port = await freePort();
    const env = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      SANDBOX_PORT: String(port),
      SANDBOX_WEBHOOK_URL: receiver.url,
      INFERENCE_URL: fake.url,
      INFERENCE_CONCURRENCY: String(CONCURRENCY),
      BENCHMARKS_DIR: benchmarksDir,
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

    const stored = async () =>
      (
        await db.query<{ question_id: string }>(
          'SELECT question_id FROM sandbox.run_answers WHERE answered_at IS NOT NULL',
        )
      ).rows.map((r) => r.question_id);

    const first = await launch();
    const platform = createHttpPlatform({ baseUrl: `http://127.0.0.1:${port}`, token: first.token, retries: 8, retryBaseDelayMs: 100 });
    const run = await platform.launchRun({ benchmarkId: 'stories-30', modelId: 'tiny' }, 'resume-1');
    await waitFor(async () => (await stored()).length >= 8, 20_000);
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;
    const storedBeforeKill = new Set(await stored());
    const askedBeforeKill = fake.generationRequests().length;
    expect(storedBeforeKill.size).toBeGreaterThanOrEqual(8);
    expect(storedBeforeKill.size).toBeLessThan(N);

    const second = await launch();
    const done = await waitForRun(platform, run.id, 30_000);
    expect(done).toMatchObject({ status: 'completed', score: 1, progress: { done: N, total: N } });

    // Stored answers were never asked again; only questions in flight at the kill (never stored) could be.
    const counts = new Map(items.map((item) => [item.id, fake.countFor(item.question)]));
    for (const id of storedBeforeKill) expect(counts.get(id)).toBe(1);
    const askedTwice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
    expect(askedTwice.length).toBeLessThanOrEqual(CONCURRENCY);
    for (const id of askedTwice) expect(storedBeforeKill.has(id)).toBe(false);
    expect([...counts.values()].every((n) => n >= 1)).toBe(true);
    expect(fake.generationRequests().length).toBe(N + askedTwice.length);
    expect(askedBeforeKill).toBeLessThanOrEqual(storedBeforeKill.size + CONCURRENCY);

    await waitFor(
      () => receiver.deliveries.some((d) => verifyWebhook(second.secret, d.body, d.headers).data.id === run.id),
      10_000,
    );
    const types = receiver.deliveries.map((d) => verifyWebhook(second.secret, d.body, d.headers)).filter((e) => e.data.id === run.id);
    expect(types.map((e) => e.type)).toEqual(['run.completed']);
  });
});
