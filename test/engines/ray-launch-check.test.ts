// Before a Ray training is priced or launched the cluster must answer (GET /api/version): else a 503 naming RAY_ADDRESS, nothing charged or created.
import http from 'node:http';
import { copyFile, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createRayTrainer } from '@verdict/platform/engines/ray-trainer';
import type { Trainer } from '@verdict/platform/engines/trainer';
import { isPlatformError } from '@verdict/contract/errors';
import { seedEngineRun } from './fixtures/engine-run.js';
import { createTestDatabase } from '../kit/database.js';
import { STORIES_MODEL_FILE } from '../kit/engines.js';
import { startFakeRay, type FakeRay } from '../kit/fakes/ray.js';
import { startTestSandbox, type TestSandbox } from '../platform/helpers.js';

const ENGINE = 'test engine, CPU';
const BASE = 'tiny-stories';
const TOKEN = 'ray-launch-check-token-0123456789abcdef';

/** An address where nothing listens: a port just released. */
async function deadAddress(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('Ray launch check', () => {
  const started: TestSandbox[] = [];
  let fake: FakeRay | undefined;
  afterEach(async () => {
    for (const s of started.splice(0)) await s.sandbox.stop();
    await fake?.close();
    fake = undefined;
  });

  async function platformWith(trainer: Trainer) {
    const databaseUrl = await createTestDatabase('raycheck');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-raycheck-'));
    // A real GGUF: the estimate a cluster lets through reads its header (architecture, tensor types).
    await copyFile(STORIES_MODEL_FILE, path.join(dir, `${BASE}.gguf`));
    const runId = await seedEngineRun(databaseUrl, BASE, ENGINE, [
      { id: 'q1', question: 'Once upon a time, there was a little', answer: 'girl' },
      { id: 'q2', question: 'Lily liked to play in the', answer: 'park' },
    ]);
    const s = await startTestSandbox({
      databaseUrl,
      training: {
        trainer,
        adaptersDir: path.join(dir, 'adapters'),
        workDir: path.join(dir, 'training'),
        threads: 1,
        creditsPer1kTokens: 2,
        tokensPerSecond: 1000,
        baseModelPath: (id) => (id === BASE ? path.join(dir, `${BASE}.gguf`) : null),
        countTokens: async (_model, text) => text.split(/\s+/).filter(Boolean).length,
        registerAdapter: async () => undefined,
      },
    });
    started.push(s);
    const dataset = await s.platform.buildDataset({ runId }, 'ds');
    const trainings = async () => {
      const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
      const count = await pool.query('SELECT count(*)::int AS n FROM sandbox.trainings');
      await pool.end();
      return count.rows[0].n as number;
    };
    return { platform: s.platform, dataset, trainings };
  }

  const rayTrainer = (address: string, headers?: Record<string, string>) =>
    createRayTrainer({ address, sharedDir: os.tmpdir(), ...(headers ? { headers } : {}), attempts: 1, retryBaseMs: 10 });

  it('a cluster that does not answer: the estimate and the launch are refused with a retryable 503 naming RAY_ADDRESS; nothing is charged or created', async () => {
    const address = await deadAddress();
    const { platform, dataset, trainings } = await platformWith(rayTrainer(address));
    const balance = (await platform.getBalance()).balanceCredits;
    for (const call of [
      () => platform.estimateTraining({ datasetId: dataset.id, baseModelId: BASE }),
      () => platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE }, 'launch-1'),
    ]) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(isPlatformError(error)).toBe(true);
      if (!isPlatformError(error)) continue;
      expect(error.status).toBe(503);
      // 'unavailable', as the platform answers when its inference engine is down: retryable, the same idempotency key.
      expect(error.code).toBe('unavailable');
      expect(error.retryable).toBe(true);
      expect(error.message).toContain(`the Ray cluster at RAY_ADDRESS=${address} does not answer`);
      expect(error.message).toContain('nothing was launched or charged');
    }
    expect((await platform.getBalance()).balanceCredits).toBe(balance);
    expect(await trainings()).toBe(0);
  }, 60_000);

  it('a cluster that answers /api/version lets the estimate through; one that refuses the token is refused in Ray\'s words (422), asked once', async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const ok = await platformWith(rayTrainer(fake.address, { Authorization: `Bearer ${TOKEN}` }));
    const estimate = await ok.platform.estimateTraining({ datasetId: ok.dataset.id, baseModelId: BASE });
    expect(estimate.priceCredits).toBeGreaterThan(0);
    expect(fake.requests.filter((r) => r.path === '/api/version').map((r) => r.status)).toEqual([200]);

    const wrong = await platformWith(rayTrainer(fake.address, { Authorization: 'Bearer not-the-token' }));
    const error = await wrong.platform.launchTraining({ datasetId: wrong.dataset.id, baseModelId: BASE }, 'launch-2').then(
      () => null,
      (e: unknown) => e,
    );
    expect(isPlatformError(error)).toBe(true);
    if (isPlatformError(error)) {
      expect(error.status).toBe(422);
      expect(error.message).toMatch(/the Ray cluster at RAY_ADDRESS=.* refused: Ray says: .*check RAY_AUTH_TOKEN or RAY_JOB_HEADERS/);
    }
    expect(await wrong.trainings()).toBe(0);
    // No job was ever submitted to the cluster.
    expect(fake.requests.filter((r) => r.path.startsWith('/api/jobs'))).toEqual([]);
  }, 60_000);
});
