// The training supervisor through the platform API: a real training is a durable job, trained once per launch, rerun after a crash, completed once.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isPlatformError } from '@verdict/contract/errors';
import type { AdapterRegistration } from '@verdict/platform/engines/lora-adapters';
import type { Trainer } from '@verdict/platform/engines/trainer';
import { bundledTrainerRefusal } from '@verdict/platform/engines/trainer-base-model';
import { createHttpPlatform } from '@verdict/contract/http-client';
import type { Platform } from '@verdict/contract/platform';
import type { SandboxTrainingOptions } from '@verdict/platform/sandbox/sandbox';
import { seedEngineRun } from './fixtures/engine-run.js';
import { createTestDatabase } from '../kit/database.js';
import { startReceiver, startTestSandbox, waitFor, waitForTraining, type Receiver, type TestSandbox } from '../platform/helpers.js';
import { testTrainer } from './fixtures/test-trainer.js';
import { readyLine } from './fixtures/ready-line.js';
import { nodeArgs } from '../kit/compiled.js';
import { STORIES_MODEL_FILE, pythonWithTorch } from '../kit/engines.js';

const ENGINE = 'test engine, CPU';
const execFileAsync = promisify(execFile);
/** Writes the kit's GGUF of a tensor type the bundled trainer does not read (numpy is enough; torch's python has it). */
const python = pythonWithTorch();
if (!python) console.warn('SKIPPED the refusal of a base model with unreadable tensors: no python with numpy and torch');
const BASE = 'tiny-stories';

interface Setup {
  databaseUrl: string;
  dir: string;
  registrations: AdapterRegistration[];
  modelRowsAtRegistration: number[];
}

function trainingOptions(setup: Setup, trainer: Trainer): SandboxTrainingOptions {
  return {
    trainer,
    adaptersDir: path.join(setup.dir, 'adapters'),
    workDir: path.join(setup.dir, 'training'),
    threads: 1,
    progressIntervalMs: 0,
    creditsPer1kTokens: 2,
    tokensPerSecond: 1000,
    baseModelPath: (id) => (id === BASE ? path.join(setup.dir, `${BASE}.gguf`) : null),
    countTokens: async (_model, text) => text.split(/\s+/).filter(Boolean).length,
    registerAdapter: async (adapter) => {
      const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: 1 });
      const rows = await pool.query('SELECT count(*)::int AS n FROM sandbox.models WHERE id = $1', [adapter.name]);
      await pool.end();
      setup.modelRowsAtRegistration.push(rows.rows[0].n as number);
      setup.registrations.push(adapter);
    },
  };
}

/** The stories run's questions, as answered: q1, q2 and q4 failed. */
const ITEMS = [
  { id: 'q1', question: 'Once upon a time, there was a little', answer: 'girl', score: 0 },
  { id: 'q2', question: 'Lily liked to play in the', answer: 'park', score: 0 },
  { id: 'q3', question: 'The sun was', answer: 'shining', score: 1 },
  { id: 'q4', question: 'Tom had a big red', answer: 'ball', score: 0 },
  { id: 'q5', question: 'They went to the', answer: 'store', score: 1 },
];

/** The estimate's and the launch's refusals of a training of BASE on `datasetId`: both must be `engine_unavailable`, not retryable. */
async function refusedMessages(platform: Platform, datasetId: string): Promise<string[]> {
  const messages: string[] = [];
  for (const call of [
    () => platform.estimateTraining({ datasetId, baseModelId: BASE }),
    () => platform.launchTraining({ datasetId, baseModelId: BASE }, 'one'),
  ]) {
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    expect(isPlatformError(error)).toBe(true);
    if (!isPlatformError(error)) continue;
    expect(error.code).toBe('engine_unavailable');
    expect(error.retryable).toBe(false);
    messages.push(error.message);
  }
  expect(messages).toHaveLength(2);
  return messages;
}

describe('real trainings under the training supervisor', () => {
  const started: TestSandbox[] = [];
  let receiver: Receiver | undefined;
  let setup: Setup;

  beforeEach(async () => {
    setup = {
      databaseUrl: await createTestDatabase('trainsup'),
      dir: await mkdtemp(path.join(os.tmpdir(), 'verdict-trainsup-')),
      registrations: [],
      modelRowsAtRegistration: [],
    };
    await writeFile(path.join(setup.dir, `${BASE}.gguf`), 'not read by the test trainer');
  });
  afterEach(async () => {
    for (const s of started.splice(0)) await s.sandbox.stop();
    await receiver?.stop();
    receiver = undefined;
  });

  async function start(trainer: Trainer, extra: { webhookUrl?: string } = {}): Promise<TestSandbox> {
    const s = await startTestSandbox({ databaseUrl: setup.databaseUrl, training: trainingOptions(setup, trainer), ...extra });
    started.push(s);
    return s;
  }

  it('builds the dataset from the failed questions in prompt variants, prices it, trains once, registers the adapter before the model exists, charges and signals, serves it again after a restart', async () => {
    const runId = await seedEngineRun(setup.databaseUrl, BASE, ENGINE, ITEMS);
    receiver = await startReceiver();
    const { trainer, state, holdNow } = testTrainer();
    const { platform } = await start(trainer, { webhookUrl: receiver.url });

    const dataset = await platform.buildDataset({ runId, augmentation: 3 }, 'ds-1');
    expect(dataset.trainedQuestionIds).toEqual(['q1', 'q2', 'q4']);
    expect(dataset.failedQuestionCount).toBe(3);
    expect(dataset.exampleCount).toBe(9);

    const estimate = await platform.estimateTraining({ datasetId: dataset.id, baseModelId: BASE, epochs: 2 });
    expect(estimate.trainedTokens).toBe(dataset.tokenCount * 2);
    expect(estimate.creditsPer1kTokens).toBe(2);
    expect(estimate.priceCredits).toBe(Math.max(0.01, Math.round(((dataset.tokenCount * 2) / 1000) * 2 * 100) / 100));
    const balanceBefore = (await platform.getBalance()).balanceCredits;

    holdNow();
    const launched = await platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE, epochs: 2 }, 'train-1');
    const again = await platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE, epochs: 2 }, 'train-1');
    expect(again.id).toBe(launched.id);

    // Progress is stored and readable while the trainer works.
    const mid = await waitFor(async () => {
      const job = await platform.getTraining(launched.id);
      return job.status === 'running' && job.progress > 0 ? job : undefined;
    });
    expect(mid.progress).toBe(0.25);
    expect(mid.estimatedFinishAt).not.toBeNull();
    state.hold!.release();

    const done = await waitForTraining(platform, launched.id);
    expect(done.status).toBe('completed');
    expect(done.progress).toBe(1);
    expect(state.starts.map((s) => s.jobId)).toEqual([launched.id]);
    expect(state.starts[0]!.hyperparameters.epochs).toBe(2);
    expect(state.starts[0]!.baseModelPath).toBe(path.join(setup.dir, `${BASE}.gguf`));

    // Each failed question in distinct prompt variants, the expected answer as the completion.
    const examples = state.datasets[0]!;
    expect(examples).toHaveLength(9);
    for (const item of ITEMS.filter((i) => ['q1', 'q2', 'q4'].includes(i.id))) {
      const mine = examples.filter((e) => e.completion.trim() === item.answer);
      expect(mine).toHaveLength(3);
      expect(new Set(mine.map((e) => e.prompt)).size).toBe(3);
      expect(mine.some((e) => e.prompt.includes(item.question))).toBe(true);
    }

    const model = await platform.getModel(done.producedModelId!);
    expect(model.kind).toBe('fine_tuned');
    expect(model.baseModelId).toBe(BASE);
    expect(setup.registrations).toEqual([{ name: model.id, path: path.join(setup.dir, 'adapters', `${launched.id}.gguf`), baseModelId: BASE }]);
    expect(setup.modelRowsAtRegistration).toEqual([0]);
    expect(await readFile(setup.registrations[0]!.path, 'utf8')).toContain('9 examples');

    expect(done.priceChargedCredits).toBe(estimate.priceCredits);
    const balanceAfter = (await platform.getBalance()).balanceCredits;
    expect(Math.round((balanceBefore - balanceAfter) * 100) / 100).toBe(estimate.priceCredits);
    const events = await waitFor(() => {
      const bodies = receiver!.deliveries.map((d) => JSON.parse(d.body) as { type: string; data: { id: string } });
      const completed = bodies.filter((b) => b.type === 'training.completed');
      return completed.length > 0 ? completed : undefined;
    });
    expect(events[0]!.data.id).toBe(launched.id);
    expect(receiver.deliveries[0]!.headers['webhook-signature']).toMatch(/^v1,/);

    // A restarted platform serves the adapters it produced again (an embedded endpoint starts empty).
    await started.splice(0)[0]!.sandbox.stop();
    await start(testTrainer().trainer);
    await waitFor(() => setup.registrations.length === 2 || undefined);
    expect(setup.registrations[1]).toEqual(setup.registrations[0]);
  });

  it('two platform processes on one database never run two trainer jobs for one training', async () => {
    const runId = await seedEngineRun(setup.databaseUrl, BASE, ENGINE, ITEMS);
    const first = testTrainer();
    const second = testTrainer();
    first.holdNow();
    second.holdNow();
    const a = await start(first.trainer);
    await start(second.trainer);
    const dataset = await a.platform.buildDataset({ runId }, 'ds');
    const job = await a.platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE }, 'one');
    await waitFor(() => first.state.starts.length + second.state.starts.length > 0 || undefined);
    // Both processes tick every 25 ms: give the other one many chances to start it too.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(first.state.starts.length + second.state.starts.length).toBe(1);
    first.state.hold!.release();
    second.state.hold!.release();
    expect((await waitForTraining(a.platform, job.id)).status).toBe('completed');
    expect(first.state.starts.length + second.state.starts.length).toBe(1);
    expect(setup.registrations).toHaveLength(1);
  });

  it('a platform killed mid-training (SIGKILL): another process reruns it, never two trainer jobs at once, completes it once', async () => {
    const runId = await seedEngineRun(setup.databaseUrl, BASE, ENGINE, ITEMS);
    const child = await startChild(setup, 'hold');
    const dataset = await child.platform.buildDataset({ runId }, 'ds');
    const job = await child.platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE }, 'one');
    await waitFor(async () => (await childStarts(setup)).length === 1 || undefined);

    const survivor = testTrainer();
    const b = await start(survivor.trainer);
    // The survivor ticks every 25 ms while the child holds the training's lock.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(survivor.state.starts).toHaveLength(0);
    expect((await b.platform.getTraining(job.id)).status).toBe('running');

    await child.kill();
    const rerun = await waitForTraining(b.platform, job.id);
    expect(rerun.status).toBe('completed');
    expect(survivor.state.starts.map((s) => s.jobId)).toEqual([job.id]);
    expect(await childStarts(setup)).toEqual([job.id]);
    const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: 1 });
    const row = await pool.query('SELECT attempts, status FROM sandbox.trainings WHERE id = $1', [job.id]);
    const models = await pool.query('SELECT count(*)::int AS n FROM sandbox.models WHERE training_job_id = $1', [job.id]);
    await pool.end();
    expect(row.rows[0]).toEqual({ attempts: 2, status: 'completed' });
    expect(models.rows[0].n).toBe(1);
    expect(setup.registrations).toHaveLength(1);
  });

  it('an adapter written before the platform was killed is taken as is: no second trainer job', async () => {
    const runId = await seedEngineRun(setup.databaseUrl, BASE, ENGINE, ITEMS);
    const child = await startChild(setup, 'hang-after-adapter');
    const dataset = await child.platform.buildDataset({ runId }, 'ds');
    const job = await child.platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE }, 'one');
    const adapter = path.join(setup.dir, 'adapters', `${job.id}.gguf`);
    await waitFor(async () => (await readFile(adapter, 'utf8').catch(() => '')).includes('examples') || undefined);
    expect((await child.platform.getTraining(job.id)).status).toBe('running');

    await child.kill();
    const survivor = testTrainer();
    const b = await start(survivor.trainer);
    const done = await waitForTraining(b.platform, job.id);
    expect(done.status).toBe('completed');
    expect(survivor.state.starts).toHaveLength(0);
    expect(setup.registrations.map((r) => r.path)).toEqual([adapter]);
  });

  it.skipIf(!python)('a base model with tensors the bundled trainer cannot read is refused at the estimate and the launch, naming the types it reads, and nothing is charged', async () => {
    // A real GGUF (written by the test kit) whose matrices are IQ2_XXS, in place of the base model's file.
    await execFileAsync(python!, [path.resolve('test/platform/engines/fixtures/gguf_quant.py'), STORIES_MODEL_FILE, setup.dir, 'IQ2_XXS']);
    await rename(path.join(setup.dir, 'IQ2_XXS.gguf'), path.join(setup.dir, `${BASE}.gguf`));
    const runId = await seedEngineRun(setup.databaseUrl, BASE, ENGINE, ITEMS);
    const { trainer, state } = testTrainer();
    const { platform } = await start({ ...trainer, checkBaseModel: bundledTrainerRefusal });
    const dataset = await platform.buildDataset({ runId }, 'ds');
    const balance = (await platform.getBalance()).balanceCredits;
    for (const message of await refusedMessages(platform, dataset.id)) {
      expect(message).toContain(`${BASE} cannot be trained here: the base model ${BASE}.gguf has tensors stored as IQ2_XXS (token_embd.weight`);
      expect(message).toContain('it reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS');
    }
    expect((await platform.getBalance()).balanceCredits).toBe(balance);
    const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: 1 });
    const count = await pool.query('SELECT count(*)::int AS n FROM sandbox.trainings');
    await pool.end();
    expect(count.rows[0].n).toBe(0);
    expect(state.starts).toHaveLength(0);
  });

  it('without PyTorch the estimate and the launch refuse with a coded error saying how to install it, and nothing is created', async () => {
    const runId = await seedEngineRun(setup.databaseUrl, BASE, ENGINE, ITEMS);
    const { trainer, state } = testTrainer({ available: { ok: false, reason: 'no python with torch found (tried python3, /usr/bin/python3)' } });
    const { platform } = await start(trainer);
    const dataset = await platform.buildDataset({ runId }, 'ds');
    for (const message of await refusedMessages(platform, dataset.id)) {
      expect(message).toContain('training needs PyTorch: install it with `apt-get install -y python3-torch` (or pip install torch)');
      expect(message).toContain('tried python3, /usr/bin/python3');
    }
    const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: 1 });
    const count = await pool.query('SELECT count(*)::int AS n FROM sandbox.trainings');
    await pool.end();
    expect(count.rows[0].n).toBe(0);
    expect(state.starts).toHaveLength(0);
  });

  it('a base model of an architecture the trainer cannot build is refused at the estimate and the launch, naming the supported ones; nothing is created or charged', async () => {
    // A GGUF whose header names a recurrent architecture (no tensors: the header is all that is read).
    await writeFile(path.join(setup.dir, `${BASE}.gguf`), ggufHeaderOnly({ 'general.architecture': 'mamba', 'general.name': 'tiny mamba' }));
    const runId = await seedEngineRun(setup.databaseUrl, BASE, ENGINE, ITEMS);
    const { trainer, state } = testTrainer();
    const { platform } = await start({ ...trainer, checkBaseModel: bundledTrainerRefusal });
    const dataset = await platform.buildDataset({ runId }, 'ds');
    const balance = await platform.getBalance();
    for (const message of await refusedMessages(platform, dataset.id)) {
      expect(message).toMatch(/^POST \/api\/v1\/trainings(\/estimate)?: /);
      expect(message).toContain(
        `${BASE} cannot be trained here: the base model ${BASE}.gguf has architecture mamba, which the bundled trainer cannot train; it trains gemma2, gemma3, llama, phi3, qwen2, qwen3`,
      );
    }
    expect(await platform.getBalance()).toEqual(balance);
    const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: 1 });
    const count = await pool.query('SELECT count(*)::int AS n FROM sandbox.trainings');
    await pool.end();
    expect(count.rows[0].n).toBe(0);
    expect(state.starts).toHaveLength(0);

    // The same file naming a trainable architecture passes the check and trains.
    await writeFile(path.join(setup.dir, `${BASE}.gguf`), ggufHeaderOnly({ 'general.architecture': 'qwen3', 'general.name': 'tiny qwen3' }));
    const job = await platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE }, 'two');
    expect((await waitForTraining(platform, job.id)).status).toBe('completed');
    expect(state.starts).toHaveLength(1);
  });
});

/** A GGUF v3 file of string metadata only, no tensors. */
function ggufHeaderOnly(kv: Record<string, string>): Buffer {
  const u32 = (n: number) => Buffer.from(Uint32Array.of(n).buffer);
  const u64 = (n: number) => Buffer.from(BigUint64Array.of(BigInt(n)).buffer);
  const str = (s: string) => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
  const entries = Object.entries(kv).map(([key, value]) => Buffer.concat([str(key), u32(8), str(value)]));
  return Buffer.concat([Buffer.from('GGUF'), u32(3), u64(0), u64(entries.length), ...entries]);
}

interface Child {
  platform: Platform;
  kill(): Promise<void>;
}

/** The platform in its own process (test/engines/fixtures/training-process.ts), to be SIGKILLed. */
async function startChild(setup: Setup, mode: 'hold' | 'hang-after-adapter'): Promise<Child> {
  const child = spawn(process.execPath, await nodeArgs(path.join(import.meta.dirname, 'fixtures/training-process.ts')), {
    env: { ...process.env, DATABASE_URL: setup.databaseUrl, TRAINING_DIR: setup.dir, TRAINER_MODE: mode, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const { url, token } = await readyLine(child);
  return {
    platform: createHttpPlatform({ baseUrl: url, token, timeoutMs: 5_000, retryBaseDelayMs: 20 }),
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

async function childStarts(setup: Setup): Promise<string[]> {
  const text = await readFile(path.join(setup.dir, 'child-starts.log'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean);
}
