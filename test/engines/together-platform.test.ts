// The full loop on the fake Together through configuration only: base runs on Together's inference, a Together LoRA job priced by estimate-price, the platform killed while it runs (reattached, one job), the fine-tuned model benchmarked under Together's output name.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { isPlatformError } from '@verdict/contract/errors';
import { createHttpPlatform } from '@verdict/contract/http-client';
import type { Platform } from '@verdict/contract/platform';
import { createTestDatabase } from '../kit/database.js';
import { waitFor, waitForRun, waitForTraining } from '../platform/helpers.js';
import { startFakeTogether, type FakeTogether } from '../kit/fakes/together.js';
import { readyLine } from './fixtures/ready-line.js';
import { nodeArgs } from '../kit/compiled.js';

const MODEL = 'togethercomputer/Tiny-Stories-Instruct';
const BENCHMARK = '501';
const BENCHMARK_FILE = path.resolve(import.meta.dirname, '../e2e/fixtures/benchmarks/501.jsonl');

interface Child {
  platform: Platform;
  kill(): Promise<void>;
}

const children: Child[] = [];
let fake: FakeTogether | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) await child.kill();
  await fake?.close();
  fake = undefined;
});

async function startPlatform(env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, await nodeArgs(path.join(import.meta.dirname, 'fixtures/together-process.ts')), {
    env: { ...process.env, ...env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const { url, token } = await readyLine(child);
  const handle: Child = {
    platform: createHttpPlatform({ baseUrl: url, token, timeoutMs: 10_000, retryBaseDelayMs: 20 }),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  children.push(handle);
  return handle;
}

describe('Together end to end on the fake', () => {
  it('prices by estimate-price, survives a kill while the job runs (one job), and benchmarks the output model on Together', async () => {
    fake = await startFakeTogether({ models: [MODEL], dollarsPer1kTokens: 2 });
    const root = await mkdtemp(path.join(os.tmpdir(), 'verdict-together-'));
    const benchmarksDir = path.join(root, 'benchmarks');
    await mkdir(benchmarksDir);
    await copyFile(BENCHMARK_FILE, path.join(benchmarksDir, `${BENCHMARK}.jsonl`));
    const env = {
      DATABASE_URL: await createTestDatabase('together'),
      DATA_DIR: path.join(root, 'data'),
      BENCHMARKS_DIR: benchmarksDir,
      TOGETHER_API_KEY: fake.apiKey,
      TOGETHER_API_URL: fake.apiUrl,
      TOGETHER_POLL_MS: '50',
      TOGETHER_MAX_POLL_MS: '200',
      INFERENCE_CONCURRENCY: '2',
    };
    const first = await startPlatform(env);
    const a = first.platform;

    const before = await waitForRun(a, (await a.launchRun({ benchmarkId: BENCHMARK, modelId: MODEL }, 'base')).id, 30_000);
    expect(before.status).toBe('completed');
    expect(fake.requests.some((r) => r.path === '/v1/chat/completions' && (r.body as { model: string }).model === MODEL)).toBe(true);

    const dataset = await a.buildDataset({ runId: before.id }, 'ds');
    const estimate = await a.estimateTraining({ datasetId: dataset.id, baseModelId: MODEL });
    const quoted = fake.requests.filter((r) => r.path === '/v1/fine-tunes/estimate-price').at(-1)!;
    const answer = await fetch(`${fake.apiUrl}/fine-tunes/estimate-price`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(quoted.body),
    });
    const together = (await answer.json()) as { estimated_total_price: number };
    expect(estimate.priceCredits).toBe(Math.max(0.01, Math.round(together.estimated_total_price * 100) / 100));

    fake.faults.holdJobs = true;
    const training = await a.launchTraining({ datasetId: dataset.id, baseModelId: MODEL }, 'train');
    expect(training.priceEstimatedCredits).toBe(estimate.priceCredits);
    await waitFor(async () => fake!.jobs()[0]?.status === 'running' || undefined, 20_000);
    await first.kill();

    fake.faults.rateLimitNext = 1;
    const second = await startPlatform(env);
    const b = second.platform;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await b.getTraining(training.id)).status).toBe('running');
    fake.faults.holdJobs = false;
    const trained = await waitForTraining(b, training.id, 30_000);
    expect(trained.status).toBe('completed');
    expect(fake.counts.creations).toBe(1);
    expect(fake.counts.uploads).toBe(1);

    const outputName = fake.jobs()[0]!.output_name;
    const modelId = trained.producedModelId!;
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
    const row = await pool.query('SELECT served_model, adapter_path FROM sandbox.models WHERE id = $1', [modelId]);
    await pool.end();
    expect(row.rows[0]).toEqual({ served_model: outputName, adapter_path: null });

    const after = await waitForRun(b, (await b.launchRun({ benchmarkId: BENCHMARK, modelId }, 'after')).id, 30_000);
    expect(after.status).toBe('completed');
    expect(fake.requests.some((r) => r.path === '/v1/chat/completions' && (r.body as { model: string }).model === outputName)).toBe(true);
    expect(after.score!).toBeGreaterThan(before.score!);
    console.log(`[together] base ${before.score} -> fine-tuned ${after.score}; price ${estimate.priceCredits} credits; job creations ${fake.counts.creations}`);
  }, 120_000);

  it('a price Together will not allow is refused in its words at estimate and launch, nothing launched', async () => {
    fake = await startFakeTogether({ models: [MODEL], balance: 0 });
    const root = await mkdtemp(path.join(os.tmpdir(), 'verdict-together-'));
    const benchmarksDir = path.join(root, 'benchmarks');
    await mkdir(benchmarksDir);
    await copyFile(BENCHMARK_FILE, path.join(benchmarksDir, `${BENCHMARK}.jsonl`));
    const { platform } = await startPlatform({
      DATABASE_URL: await createTestDatabase('together'),
      DATA_DIR: path.join(root, 'data'),
      BENCHMARKS_DIR: benchmarksDir,
      TOGETHER_API_KEY: fake.apiKey,
      TOGETHER_API_URL: fake.apiUrl,
    });
    const run = await waitForRun(platform, (await platform.launchRun({ benchmarkId: BENCHMARK, modelId: MODEL }, 'base')).id, 30_000);
    const dataset = await platform.buildDataset({ runId: run.id }, 'ds');
    for (const call of [
      () => platform.estimateTraining({ datasetId: dataset.id, baseModelId: MODEL }),
      () => platform.launchTraining({ datasetId: dataset.id, baseModelId: MODEL }, 'one'),
    ]) {
      const error = await call().then(() => null, (e: unknown) => e);
      expect(isPlatformError(error) && error.message).toContain("Together says: insufficient balance");
    }
    expect(fake.counts.creations).toBe(0);
  }, 60_000);
});
