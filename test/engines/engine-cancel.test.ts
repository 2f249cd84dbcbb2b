// Cancelling real work: a run on llama.cpp stops asking and is never resumed; a PyTorch training's subprocess is gone and never relaunched.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { roundCredits } from '@verdict/contract/contract';
import { startLlamaServer, type LlamaServer } from '@verdict/platform/engines/llama-server';
import { createPytorchTrainer } from '@verdict/platform/engines/pytorch-trainer';
import { chargeFor } from '@verdict/platform/engines/run-pricing';
import type { SandboxOptions } from '@verdict/platform/sandbox/sandbox';
import { verifyWebhook } from '@verdict/contract/webhooks';
import { createTestDatabase } from '../kit/database.js';
import { STORIES_MODEL_FILE } from '../kit/engines.js';
import { sleep } from '../kit/wait.js';
import { startReceiver, startTestSandbox, waitFor, waitForRun, type Receiver, type TestSandbox } from '../platform/helpers.js';

const MODEL = 'stories260K';

/** Long generations, so that a run of them is still asking when it is cancelled. */
const LONG: BenchmarkItem[] = Array.from({ length: 30 }, (_, i) => ({
  id: `long-${i + 1}`,
  question: `Once upon a time, in a story number ${i + 1}, there was`,
  answer: 'a little girl named Lily',
  scorer: 'contains',
  max_tokens: 120,
}));
/** Answers stories260K does not give: every question fails and goes into the training set. */
const FAILING: BenchmarkItem[] = ['zebra', 'volcano', 'satellite', 'orchestra', 'glacier', 'telescope', 'cactus', 'pyramid'].map(
  (word, i) => ({ id: `fail-${i + 1}`, question: `The little dog found a`, answer: word, scorer: 'contains', max_tokens: 8 }),
);

/** Forwards to the engine, counting generation requests and the ones the platform aborted. */
interface CountingProxy {
  url: string;
  generations: number;
  inFlight: number;
  aborted: number;
  close(): Promise<void>;
}

async function startCountingProxy(upstream: string): Promise<CountingProxy> {
  const target = new URL(upstream);
  const proxy = { generations: 0, inFlight: 0, aborted: 0 } as CountingProxy;
  const server = http.createServer((req, res) => {
    const generation = req.method === 'POST' && /\/completions$/.test(req.url ?? '');
    if (generation) {
      proxy.generations++;
      proxy.inFlight++;
    }
    const forward = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
    res.on('close', () => {
      if (!generation) return;
      proxy.inFlight--;
      if (!res.writableFinished) {
        proxy.aborted++;
        forward.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

/** Process ids whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline.includes(needle) && !cmdline.includes('vitest')) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

let dir: string;
let modelsDir: string;
let server: LlamaServer;
let proxy: CountingProxy;
let receiver: Receiver;
const started: TestSandbox[] = [];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-cancel-'));
  modelsDir = path.join(dir, 'models');
  fs.mkdirSync(modelsDir);
  fs.copyFileSync(STORIES_MODEL_FILE, path.join(modelsDir, `${MODEL}.gguf`));
  // One thread: llama.cpp's threads wait for each other spinning, which a busy shared machine turns into minutes.
  server = await startLlamaServer({ modelsDir, threads: 1, parallel: 2 });
  proxy = await startCountingProxy(server.url);
  receiver = await startReceiver();
}, 60_000);

afterAll(async () => {
  for (const test of started) await test.sandbox.stop();
  await receiver?.stop();
  await proxy?.close();
  await server?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function platformOptions(extra: Partial<SandboxOptions> = {}): Partial<SandboxOptions> {
  return {
    webhookUrl: receiver.url,
    inference: {
      url: `${proxy.url}/v1`,
      concurrency: 2,
      pollIntervalMs: 50,
      benchmarkItems: async (id) => (id === 'long' ? LONG : id === 'failing' ? FAILING : null),
    },
    ...extra,
  };
}

async function start(options: Partial<SandboxOptions>): Promise<TestSandbox> {
  const test = await startTestSandbox(options);
  started.push(test);
  return test;
}

async function stop(test: TestSandbox): Promise<void> {
  started.splice(started.indexOf(test), 1);
  await test.sandbox.stop();
}

describe('cancelling a run on llama.cpp', () => {
  it('stops asking (requests in flight aborted, their answers discarded), charges the stored answers\' tokens within the quote, and a restart does not resume it', async () => {
    const databaseUrl = await createTestDatabase('cancel_llama');
    const first = await start({ ...platformOptions(), databaseUrl });
    const db = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    try {
      const launched = await first.platform.launchRun({ benchmarkId: 'long', modelId: MODEL }, 'long-1');
      await waitFor(async () => ((await first.platform.getRun(launched.id)).progress?.done ?? 0) >= 3, 120_000, 50);

      const cancelled = await first.platform.cancelRun(launched.id);
      expect(cancelled).toMatchObject({ status: 'cancelled', score: null, engine: `OpenAI-compatible endpoint ${new URL(proxy.url).host}` });
      await waitFor(() => proxy.inFlight === 0, 10_000);
      const asked = proxy.generations;
      const answered = cancelled.progress!.done;
      expect(answered).toBeGreaterThanOrEqual(3);
      expect(answered).toBeLessThan(LONG.length);
      // Beyond the stored answers, only the (at most 2) questions in flight at the cancel were asked.
      expect(asked - answered).toBeLessThanOrEqual(2);

      // The charge is the stored answers' tokens at the run's rate, within the quote.
      const rows = await db.query<{ answered: number; tokens: string }>(
        `SELECT count(answered_at)::int AS answered, COALESCE(sum(prompt_tokens + completion_tokens), 0)::text AS tokens
           FROM sandbox.run_answers WHERE run_id = $1`,
        [launched.id],
      );
      expect(rows.rows[0]!.answered).toBe(answered);
      expect(cancelled.promptTokens! + cancelled.completionTokens!).toBe(Number(rows.rows[0]!.tokens));
      expect(cancelled.chargedCredits).toBe(Math.min(launched.priceCredits, chargeFor(Number(rows.rows[0]!.tokens), 0.1)));
      expect(cancelled.chargedCredits!).toBeGreaterThan(0);
      expect(cancelled.chargedCredits!).toBeLessThanOrEqual(launched.priceCredits);
      const balance = await first.platform.getBalance();
      expect(balance).toMatchObject({ balanceCredits: roundCredits(1000 - cancelled.chargedCredits!), reservedCredits: 0 });

      // Nothing more is asked or stored.
      await sleep(2_000);
      expect(proxy.generations).toBe(asked);
      expect(await first.platform.getRun(launched.id)).toEqual(cancelled);
      const event = await waitFor(() =>
        receiver.deliveries.map((d) => verifyWebhook(first.sandbox.webhookSecret, d.body, d.headers)).find((e) => e.data.id === launched.id),
      );
      expect(event.type).toBe('run.cancelled');

      // A restarted platform does not resume it.
      await stop(first);
      const second = await start({ ...platformOptions(), databaseUrl });
      await sleep(2_000);
      expect(proxy.generations).toBe(asked);
      // Equal but for the link, which names the new server's port.
      const same = { ...cancelled, webUrl: expect.stringContaining(`/runs/${launched.id}`) as unknown as string };
      expect(await second.platform.getRun(launched.id)).toEqual(same);
      expect(await second.platform.cancelRun(launched.id)).toEqual(same);
      expect((await second.platform.getBalance()).balanceCredits).toBe(balance.balanceCredits);
      console.info(
        `cancelled llama.cpp run: ${answered}/${LONG.length} answered, ${asked} generation requests, ${proxy.aborted} aborted in flight, charged ${cancelled.chargedCredits} of ${launched.priceCredits}`,
      );
    } finally {
      await db.end();
    }
  }, 240_000);
});

const trainer = createPytorchTrainer({ threads: 1 });
const availability = await trainer.availability();
if (!availability.ok) console.warn(`SKIPPED cancelling a real PyTorch training: ${availability.reason}`);

describe.skipIf(!availability.ok)('cancelling a PyTorch training', () => {
  it('kills the trainer subprocess, charges its progress x the estimate, and a restarted platform does not relaunch it', async () => {
    const databaseUrl = await createTestDatabase('cancel_torch');
    const training = {
      trainer,
      adaptersDir: path.join(dir, 'adapters'),
      workDir: path.join(dir, 'training'),
      threads: 1,
      baseModelPath: (id: string) => (id === MODEL ? path.join(modelsDir, `${MODEL}.gguf`) : null),
    };
    const first = await start({ ...platformOptions({ training }), databaseUrl });
    const run = await waitForRun(first.platform, (await first.platform.launchRun({ benchmarkId: 'failing', modelId: MODEL }, 'base')).id, 120_000);
    expect(run).toMatchObject({ status: 'completed', score: 0 });
    const dataset = await first.platform.buildDataset({ runId: run.id, augmentation: 20 }, 'ds');
    const estimate = await first.platform.estimateTraining({ datasetId: dataset.id, baseModelId: MODEL, epochs: 5 });
    const launched = await first.platform.launchTraining({ datasetId: dataset.id, baseModelId: MODEL, epochs: 5 }, 'train');
    const workDir = path.join(dir, 'training', launched.id);

    const mid = await waitFor(async () => {
      const job = await first.platform.getTraining(launched.id);
      return job.steps !== null && job.steps.done > 0 ? job : undefined;
    }, 180_000, 100);
    expect(mid.status).toBe('running');
    expect(processesWith(workDir)).toHaveLength(1);
    const balanceBefore = (await first.platform.getBalance()).balanceCredits;

    const cancelled = await first.platform.cancelTraining(launched.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', producedModelId: null });
    expect(cancelled.progress).toBeGreaterThan(0);
    expect(cancelled.progress).toBeLessThan(1);
    expect(cancelled.priceChargedCredits).toBe(roundCredits(estimate.priceCredits * cancelled.progress));
    expect(cancelled.priceChargedCredits!).toBeLessThanOrEqual(estimate.priceCredits);
    expect((await first.platform.getBalance()).balanceCredits).toBe(roundCredits(balanceBefore - cancelled.priceChargedCredits!));

    // The subprocess is gone; its later progress lines change nothing.
    await waitFor(() => processesWith(workDir).length === 0, 15_000, 100);
    await sleep(1_000);
    expect(await first.platform.getTraining(launched.id)).toEqual(cancelled);
    expect(fs.existsSync(path.join(dir, 'adapters', `${launched.id}.gguf`))).toBe(false);

    // A restarted platform does not start it again.
    await stop(first);
    const second = await start({ ...platformOptions({ training }), databaseUrl });
    await sleep(3_000);
    expect(processesWith(workDir)).toHaveLength(0);
    expect(await second.platform.getTraining(launched.id)).toEqual({
      ...cancelled,
      webUrl: expect.stringContaining(`/trainings/${launched.id}`) as unknown as string,
    });
    const db = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    const row = await db.query('SELECT attempts, status FROM sandbox.trainings WHERE id = $1', [launched.id]);
    await db.end();
    expect(row.rows[0]).toEqual({ attempts: 1, status: 'cancelled' });
    console.info(
      `cancelled PyTorch training at step ${cancelled.steps?.done}/${cancelled.steps?.total}: charged ${cancelled.priceChargedCredits} of ${estimate.priceCredits}`,
    );
  }, 400_000);
});
