// A remote training cancelled while no platform process follows its job (the one following it was SIGKILLed): the next process to see it stops the job at the engine, once.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpPlatform } from '@verdict/contract/http-client';
import type { Platform } from '@verdict/contract/platform';
import { createTestDatabase } from '../kit/database.js';
import { STORIES_MODEL_FILE } from '../kit/engines.js';
import { startFakeRay, type FakeRay } from '../kit/fakes/ray.js';
import { startFakeTogether, type FakeTogether } from '../kit/fakes/together.js';
import { sleep } from '../kit/wait.js';
import { waitFor } from '../platform/helpers.js';
import { seedEngineRun } from './fixtures/engine-run.js';
import { readyLine } from './fixtures/ready-line.js';
import { nodeArgs } from '../kit/compiled.js';

const TOGETHER_MODEL = 'togethercomputer/Tiny-Stories-Instruct';
const RAY_MODEL = 'stories260K';
const ENGINE = 'remote test engine';

interface LogLine {
  level: string;
  msg?: string;
  trainingId?: string;
  remoteId?: string | null;
  status?: string;
}

interface Child {
  platform: Platform;
  logs: LogLine[];
  kill(): Promise<void>;
}

const children: Child[] = [];
let together: FakeTogether | undefined;
let ray: FakeRay | undefined;
afterEach(async () => {
  for (const child of children.splice(0)) await child.kill();
  await together?.close();
  await ray?.close();
  together = undefined;
  ray = undefined;
});

/** A platform process (test/engines/fixtures/remote-trainer-process.ts); its JSON log lines are collected. */
async function startPlatform(env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, await nodeArgs(path.join(import.meta.dirname, 'fixtures/remote-trainer-process.ts')), {
    env: { ...process.env, ...env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  let pending = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const text of lines) {
      try {
        logs.push(JSON.parse(text) as LogLine);
      } catch {
        process.stderr.write(`${text}\n`);
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const { url, token } = await readyLine(child);
  const handle: Child = {
    platform: createHttpPlatform({ baseUrl: url, token, timeoutMs: 10_000, retryBaseDelayMs: 20 }),
    logs,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  children.push(handle);
  return handle;
}

/** A database with a completed run of `model` on a remote engine, a folder for the platforms' files. */
async function setup(model: string) {
  const databaseUrl = await createTestDatabase('cancelremote');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-cancel-remote-'));
  const runId = await seedEngineRun(
    databaseUrl,
    model,
    ENGINE,
    ['girl', 'park', 'ball'].map((word, position) => ({ id: `q${position + 1}`, question: `The little dog saw a ${position}`, answer: word })),
  );
  /** The training's row as the engine-stop logic sees it. */
  const row = async (id: string) => {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    try {
      const result = await pool.query<{ status: string; charged: number; engine_stopped_at: Date | null }>(
        'SELECT status, charged::float8 AS charged, engine_stopped_at FROM sandbox.trainings WHERE id = $1',
        [id],
      );
      return result.rows[0]!;
    } finally {
      await pool.end();
    }
  };
  return { base: { DATABASE_URL: databaseUrl, TRAINING_DIR: dir }, dir, runId, row };
}

/**
 * Launches a training through a process following it, SIGKILLs that process once `running` says
 * the engine runs the job, then cancels the training through a process without a trainer: no
 * process follows the job at the cancel.
 */
async function orphanTraining(env: Record<string, string>, base: Record<string, string>, runId: string, model: string, running: () => boolean) {
  const first = await startPlatform(env);
  const dataset = await first.platform.buildDataset({ runId, augmentation: 4 }, 'ds');
  const launched = await first.platform.launchTraining({ datasetId: dataset.id, baseModelId: model }, 'train');
  await waitFor(() => running() || undefined, 30_000);
  await first.kill();
  const api = await startPlatform({ ...base, REMOTE_TRAINER: 'none' });
  const cancelled = await api.platform.cancelTraining(launched.id);
  expect(cancelled.status).toBe('cancelled');
  return { training: cancelled, api };
}

describe('a remote job nobody follows when its training is cancelled', () => {
  it('Together: the restarted platform cancels the fine-tune once (by the id kept in the work folder), creates none, charges nothing more', async () => {
    together = await startFakeTogether({ models: [TOGETHER_MODEL] });
    together.faults.holdJobs = true;
    const { base, runId, row } = await setup(TOGETHER_MODEL);
    const env = { ...base, REMOTE_TRAINER: 'together', TOGETHER_API_KEY: together.apiKey, TOGETHER_API_URL: together.apiUrl };
    const fake = together;
    const { training } = await orphanTraining(env, base, runId, TOGETHER_MODEL, () => fake.jobs()[0]?.status === 'running');
    const job = fake.jobs()[0]!;
    const cancels = () => fake.requests.filter((r) => r.method === 'POST' && r.path === `/v1/fine-tunes/${job.id}/cancel`);

    // Nobody follows it: the job runs on at the engine until a process with the trainer starts.
    await sleep(300);
    expect(cancels()).toEqual([]);
    expect(job.status).toBe('running');

    const restarted = await startPlatform(env);
    await waitFor(async () => (await row(training.id)).engine_stopped_at !== null || undefined, 20_000);
    await sleep(500);
    expect(cancels().map((r) => r.status)).toEqual([200]);
    expect(fake.counts).toMatchObject({ creations: 1, cancels: 1 });
    expect(['cancel_requested', 'cancelled']).toContain(job.status);
    expect(restarted.logs).toContainEqual(
      expect.objectContaining({ level: 'info', msg: 'engine job of a cancelled training stopped', trainingId: training.id, remoteId: job.id }),
    );
    expect(await row(training.id)).toMatchObject({ status: 'cancelled', charged: training.priceChargedCredits });

    // Recorded: another restart sends nothing more.
    await restarted.kill();
    await startPlatform(env);
    await sleep(800);
    expect(cancels()).toHaveLength(1);
    expect(fake.counts.creations).toBe(1);
  }, 120_000);

  it('Together: a cancel answered 5xx is asked again later and applied once (the fine-tune found by its suffix)', async () => {
    together = await startFakeTogether({ models: [TOGETHER_MODEL] });
    together.faults.holdJobs = true;
    const { base, dir, runId, row } = await setup(TOGETHER_MODEL);
    const env = { ...base, REMOTE_TRAINER: 'together', TOGETHER_API_KEY: together.apiKey, TOGETHER_API_URL: together.apiUrl };
    const fake = together;
    const { training } = await orphanTraining(env, base, runId, TOGETHER_MODEL, () => fake.jobs()[0]?.status === 'running');
    const job = fake.jobs()[0]!;
    // Without the id kept in the work folder, the job is found by the suffix carrying the training id.
    await rm(path.join(dir, 'training', training.id, 'together.json'));
    // Each stop the trainer asks makes 2 attempts: the first stop fails whole, the second succeeds at its second attempt.
    fake.faults.cancelErrorsNext = 3;

    const restarted = await startPlatform(env);
    await waitFor(async () => (await row(training.id)).engine_stopped_at !== null || undefined, 20_000);
    await sleep(500);
    const cancels = fake.requests.filter((r) => r.method === 'POST' && r.path === `/v1/fine-tunes/${job.id}/cancel`);
    expect(cancels.map((r) => r.status)).toEqual([503, 503, 503, 200]);
    expect(fake.counts).toMatchObject({ creations: 1, cancels: 1 });
    expect(fake.requests.some((r) => r.method === 'GET' && r.path === '/v1/fine-tunes')).toBe(true);
    expect(restarted.logs.filter((l) => l.msg === 'engine job of a cancelled training not stopped yet; asked again later')).toHaveLength(1);
    expect(restarted.logs).toContainEqual(expect.objectContaining({ msg: 'engine job of a cancelled training stopped', trainingId: training.id, remoteId: job.id }));
  }, 120_000);

  it('Together: a fine-tune that finished at the engine before the cancel gets no cancel', async () => {
    together = await startFakeTogether({ models: [TOGETHER_MODEL] });
    together.faults.holdJobs = true;
    const { base, runId, row } = await setup(TOGETHER_MODEL);
    const env = { ...base, REMOTE_TRAINER: 'together', TOGETHER_API_KEY: together.apiKey, TOGETHER_API_URL: together.apiUrl };
    const fake = together;
    const first = await startPlatform(env);
    const dataset = await first.platform.buildDataset({ runId, augmentation: 4 }, 'ds');
    const launched = await first.platform.launchTraining({ datasetId: dataset.id, baseModelId: TOGETHER_MODEL }, 'train');
    await waitFor(() => fake.jobs()[0]?.status === 'running' || undefined, 30_000);
    await first.kill();
    // The job goes on at Together while no platform runs (the fake moves a job on at each read of it).
    const job = fake.jobs()[0]!;
    fake.faults.holdJobs = false;
    await waitFor(async () => {
      await fetch(`${fake.apiUrl}/fine-tunes/${job.id}`, { headers: { authorization: `Bearer ${fake.apiKey}` } });
      return job.status === 'completed' || undefined;
    }, 10_000);
    const api = await startPlatform({ ...base, REMOTE_TRAINER: 'none' });
    expect((await api.platform.cancelTraining(launched.id)).status).toBe('cancelled');

    const restarted = await startPlatform(env);
    await waitFor(async () => (await row(launched.id)).engine_stopped_at !== null || undefined, 20_000);
    await sleep(500);
    expect(fake.requests.filter((r) => r.path.endsWith('/cancel'))).toEqual([]);
    expect(fake.counts).toMatchObject({ creations: 1, cancels: 0 });
    expect(restarted.logs).toContainEqual(
      expect.objectContaining({ msg: 'engine job of a cancelled training had already ended; nothing to stop', trainingId: launched.id, remoteId: job.id, status: 'completed' }),
    );
    expect((await row(launched.id)).status).toBe('cancelled');
  }, 120_000);

  it('Together: while a process follows the job, it cancels it and no other process stops it again', async () => {
    together = await startFakeTogether({ models: [TOGETHER_MODEL] });
    together.faults.holdJobs = true;
    const { base, runId, row } = await setup(TOGETHER_MODEL);
    const env = { ...base, REMOTE_TRAINER: 'together', TOGETHER_API_KEY: together.apiKey, TOGETHER_API_URL: together.apiUrl };
    const fake = together;
    const a = await startPlatform(env);
    const b = await startPlatform(env);
    const dataset = await a.platform.buildDataset({ runId, augmentation: 4 }, 'ds');
    const launched = await a.platform.launchTraining({ datasetId: dataset.id, baseModelId: TOGETHER_MODEL }, 'train');
    await waitFor(() => fake.jobs()[0]?.status === 'running' || undefined, 30_000);
    await b.platform.cancelTraining(launched.id);
    await waitFor(async () => (await row(launched.id)).engine_stopped_at !== null || undefined, 20_000);
    await sleep(800);
    expect(fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/cancel')).map((r) => r.status)).toEqual([200]);
    const stops = [...a.logs, ...b.logs].filter((l) => l.msg === 'training cancelled; its trainer job was stopped' || l.msg === 'engine job of a cancelled training stopped');
    expect(stops).toEqual([expect.objectContaining({ msg: 'training cancelled; its trainer job was stopped', trainingId: launched.id, remoteId: fake.jobs()[0]!.id })]);
  }, 120_000);

  describe('on Ray', () => {
    async function rayEnv() {
      ray = await startFakeRay();
      ray.faults.holdJobs = true;
      const context = await setup(RAY_MODEL);
      const shared = path.join(context.dir, 'shared');
      await mkdir(shared);
      const env = { ...context.base, REMOTE_TRAINER: 'ray', RAY_ADDRESS: ray.address, RAY_SHARED_DIR: shared, BASE_MODEL_FILE: STORIES_MODEL_FILE };
      return { ...context, env, fake: ray };
    }

    it('Ray: the restarted platform stops the job once by its submission id, never submits again', async () => {
      const { base, env, runId, row, fake } = await rayEnv();
      const { training } = await orphanTraining(env, base, runId, RAY_MODEL, () => fake.jobs()[0]?.status === 'PENDING');
      const job = fake.jobs()[0]!;
      await sleep(300);
      expect(fake.counts.stops).toBe(0);

      const restarted = await startPlatform(env);
      await waitFor(async () => (await row(training.id)).engine_stopped_at !== null || undefined, 30_000);
      await sleep(500);
      expect(fake.counts).toEqual({ submissions: 1, duplicates: 0, stops: 1 });
      expect(fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/jobs/${job.submission_id}/stop`).map((r) => r.status)).toEqual([200]);
      expect(job.status).toBe('STOPPED');
      expect(restarted.logs).toContainEqual(
        expect.objectContaining({ level: 'info', msg: 'engine job of a cancelled training stopped', trainingId: training.id, remoteId: job.submission_id }),
      );
    }, 120_000);

    it('Ray: a stop answered 5xx is asked again later and applied once', async () => {
      const { base, env, runId, row, fake } = await rayEnv();
      const { training } = await orphanTraining(env, base, runId, RAY_MODEL, () => fake.jobs()[0]?.status === 'PENDING');
      const job = fake.jobs()[0]!;
      fake.faults.stopErrorsNext = 3;

      const restarted = await startPlatform(env);
      await waitFor(async () => (await row(training.id)).engine_stopped_at !== null || undefined, 30_000);
      await sleep(500);
      expect(fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/jobs/${job.submission_id}/stop`).map((r) => r.status)).toEqual([503, 503, 503, 200]);
      expect(fake.counts).toEqual({ submissions: 1, duplicates: 0, stops: 1 });
      expect(job.status).toBe('STOPPED');
      expect(restarted.logs.filter((l) => l.msg === 'engine job of a cancelled training not stopped yet; asked again later')).toHaveLength(1);
    }, 120_000);
  });
});
