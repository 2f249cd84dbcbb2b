// The full loop on the fake Ray cluster through configuration only: runs on the embedded llama.cpp server, the training a Ray job that runs the bundled trainer, the platform killed while it runs (reattached, one submission), the trained model benchmarked.
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpPlatform } from '@verdict/contract/http-client';
import type { Platform } from '@verdict/contract/platform';
import { createTestDatabase } from '../kit/database.js';
import { pythonWithTorch, rayStoriesFolders, TEST_ENGINE_THREADS } from '../kit/engines.js';
import { waitFor, waitForRun, waitForTraining } from '../platform/helpers.js';
import { startFakeRay, type FakeRay } from '../kit/fakes/ray.js';
import { readyLine } from './fixtures/ready-line.js';
import { nodeArgs } from '../kit/compiled.js';

const MODEL = 'stories260K';
const BENCHMARK = '501';
const TOKEN = 'ray-platform-token-0123456789abcdef01234567';

const PYTHON = pythonWithTorch();
if (!PYTHON) {
  console.warn(
    `[ray-platform] SKIPPED the Ray loop on the fake cluster: no python with torch and numpy here (tried TRAINER_PYTHON, python3, /usr/bin/python3); install it with \`apt-get install -y python3-torch\``,
  );
}

interface Child {
  platform: Platform;
  kill(): Promise<void>;
}

const children: Child[] = [];
let fake: FakeRay | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) await child.kill();
  await fake?.close();
  fake = undefined;
});

/** The platform in its own process, configured only through its environment (test/engines/fixtures/together-process.ts reads any engine's). */
async function startPlatform(env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, await nodeArgs(path.join(import.meta.dirname, 'fixtures/together-process.ts')), {
    env: { ...process.env, ...env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const { url, token } = await readyLine(child);
  const handle: Child = {
    platform: createHttpPlatform({ baseUrl: url, token, timeoutMs: 30_000, retryBaseDelayMs: 20 }),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  children.push(handle);
  return handle;
}

/** Models on the storage the cluster shares (mounted there at another path), a benchmark, the platform's environment. */
async function environment(name: string): Promise<{ env: Record<string, string>; modelsDir: string }> {
  const { root, modelsDir, benchmarksDir, shared, clusterMount } = await rayStoriesFolders('verdict-ray-platform-');
  return {
    modelsDir,
    env: {
      DATABASE_URL: await createTestDatabase(name),
      DATA_DIR: path.join(root, 'data'),
      MODELS_DIR: modelsDir,
      BENCHMARKS_DIR: benchmarksDir,
      ENGINE_THREADS: String(TEST_ENGINE_THREADS),
      INFERENCE_CONCURRENCY: '2',
      // A 260K-parameter model learns a one-word continuation at this rate (as the real-engines loop).
      TRAINING_LEARNING_RATE: '0.01',
      RAY_ADDRESS: fake!.address,
      RAY_SHARED_DIR: shared,
      RAY_CLUSTER_SHARED_DIR: clusterMount,
      RAY_AUTH_TOKEN: TOKEN,
      RAY_PYTHON: PYTHON!,
      RAY_NUM_GPUS: '1',
      RAY_POLL_MS: '50',
      RAY_MAX_POLL_MS: '200',
    },
  };
}

describe.skipIf(!PYTHON)('Ray end to end on the fake cluster', () => {
  it('trains as one Ray job, survives a platform killed while the job runs (reattached, one submission), and the trained model answers better', async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const { env, modelsDir } = await environment('ray');
    const first = await startPlatform(env);
    const a = first.platform;

    const before = await waitForRun(a, (await a.launchRun({ benchmarkId: BENCHMARK, modelId: MODEL }, 'base')).id, 120_000);
    expect(before.status).toBe('completed');
    const dataset = await a.buildDataset({ runId: before.id }, 'ds');
    const estimate = await a.estimateTraining({ datasetId: dataset.id, baseModelId: MODEL });
    expect(estimate.priceCredits).toBeGreaterThan(0);

    fake.faults.pauseAtProgress = true;
    const training = await a.launchTraining({ datasetId: dataset.id, baseModelId: MODEL }, 'train');
    await waitFor(() => fake!.jobs()[0]?.paused || undefined, 120_000);
    expect(fake.jobs()[0]!.status).toBe('RUNNING');
    await first.kill();

    fake.faults.rateLimitNext = 1;
    const second = await startPlatform(env);
    const b = second.platform;
    const reattached = fake.requests.length;
    await waitFor(() => fake!.requests.slice(reattached).some((r) => r.method === 'GET' && r.path.endsWith('/logs')) || undefined, 30_000);
    expect((await b.getTraining(training.id)).status).toBe('running');
    fake.resume();

    const trained = await waitForTraining(b, training.id, 180_000);
    expect(trained.status).toBe('completed');
    expect(fake.counts).toEqual({ submissions: 1, duplicates: 0, stops: 0 });
    const adapter = path.join(modelsDir, 'adapters', `${training.id}.gguf`);
    expect((await stat(adapter)).size).toBeGreaterThan(0);
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
    const row = await pool.query('SELECT attempts, trainer, adapter_path FROM sandbox.trainings WHERE id = $1', [training.id]);
    await pool.end();
    expect(row.rows[0]).toEqual({ attempts: 2, trainer: `PyTorch LoRA as Ray jobs on ${new URL(fake.address).host} (1 GPU a job)`, adapter_path: adapter });
    // The job wrote the adapter straight into MODELS_DIR/adapters on the shared storage, by the cluster's path to it.
    const spec = fake.requests.find((r) => r.method === 'POST' && r.path === '/api/jobs/')!.body as { entrypoint: string; entrypoint_num_gpus: number };
    expect(spec.entrypoint).toContain(`${env.RAY_CLUSTER_SHARED_DIR}/verdict-bot/jobs/`);
    expect(spec.entrypoint_num_gpus).toBe(1);

    const after = await waitForRun(b, (await b.launchRun({ benchmarkId: BENCHMARK, modelId: trained.producedModelId! }, 'after')).id, 120_000);
    expect(after.status).toBe('completed');
    expect(after.score!).toBeGreaterThan(before.score!);
    console.log(`[ray] base ${before.score} -> trained ${after.score}; Ray submissions ${fake.counts.submissions}; training attempts 2`);
  }, 420_000);

  it("a job that fails on the cluster fails the training in Ray's words", async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const { env } = await environment('ray');
    const { platform } = await startPlatform(env);
    const run = await waitForRun(platform, (await platform.launchRun({ benchmarkId: BENCHMARK, modelId: MODEL }, 'base')).id, 120_000);
    const dataset = await platform.buildDataset({ runId: run.id }, 'ds');
    fake.faults.killAtProgress = true;
    const training = await platform.launchTraining({ datasetId: dataset.id, baseModelId: MODEL }, 'train');
    const failed = await waitForTraining(platform, training.id, 120_000);
    expect(failed.status).toBe('failed');
    expect(failed.errorMessage).toMatch(/^the trainer failed: Ray says: Job entrypoint command failed with exit code -9: .+ \(job verdict-bot-/);
    expect(fake.counts.submissions).toBe(1);
  }, 240_000);
});
