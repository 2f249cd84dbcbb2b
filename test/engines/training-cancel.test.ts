// Cancelling a real training through one platform process while another one trains it: its trainer job is cancelled through the port, nothing restarts it.
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformError } from '@verdict/contract/errors';
import type { Trainer } from '@verdict/platform/engines/trainer';
import type { SandboxTrainingOptions } from '@verdict/platform/sandbox/sandbox';
import { seedEngineRun } from './fixtures/engine-run.js';
import { createTestDatabase } from '../kit/database.js';
import { sleep } from '../kit/wait.js';
import { startTestSandbox, waitFor, waitForTraining, type TestSandbox } from '../platform/helpers.js';
import { testTrainer } from './fixtures/test-trainer.js';

const ENGINE = 'test engine, CPU';
const BASE = 'tiny-stories';

describe('cancelling a real training', () => {
  const started: TestSandbox[] = [];
  afterEach(async () => {
    for (const s of started.splice(0)) await s.sandbox.stop();
  });

  async function setup() {
    const databaseUrl = await createTestDatabase('traincancel');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-traincancel-'));
    await writeFile(path.join(dir, `${BASE}.gguf`), 'not read by the test trainer');
    const runId = await seedEngineRun(databaseUrl, BASE, ENGINE, ['girl', 'park', 'ball'].map((word, position) => ({ id: `q${position + 1}`, question: `The little dog saw a ${position}`, answer: word })));
    const options = (trainer: Trainer): SandboxTrainingOptions => ({
      trainer,
      adaptersDir: path.join(dir, 'adapters'),
      workDir: path.join(dir, 'training'),
      threads: 1,
      progressIntervalMs: 0,
      creditsPer1kTokens: 2,
      baseModelPath: (id) => (id === BASE ? path.join(dir, `${BASE}.gguf`) : null),
      countTokens: async (_model, text) => text.split(/\s+/).filter(Boolean).length,
      registerAdapter: async () => undefined,
    });
    const start = async (trainer: Trainer) => {
      const s = await startTestSandbox({ databaseUrl, training: options(trainer) });
      started.push(s);
      return s;
    };
    return { databaseUrl, runId, start };
  }

  it('through the process that does not train it: the other one cancels its trainer job; charged its progress; neither relaunches it', async () => {
    const { databaseUrl, runId, start } = await setup();
    const first = testTrainer();
    const second = testTrainer();
    first.holdNow();
    second.holdNow();
    const a = await start(first.trainer);
    const b = await start(second.trainer);
    const dataset = await a.platform.buildDataset({ runId, augmentation: 4 }, 'ds');
    const launched = await a.platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE }, 'one');
    await waitFor(async () => (await a.platform.getTraining(launched.id)).progress > 0);
    const trainerOf = first.state.starts.length === 1 ? first : second;
    const other = trainerOf === first ? b : a;
    expect(trainerOf.state.concurrent).toBe(1);

    const cancelled = await other.platform.cancelTraining(launched.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', progress: 0.25, steps: { done: 1, total: 4 }, producedModelId: null });
    expect(cancelled.priceChargedCredits).toBe(Math.round(cancelled.priceEstimatedCredits * 0.25 * 100) / 100);

    // The training process notices on its next tick and cancels the job through the port (the held job ends).
    await waitFor(() => trainerOf.state.concurrent === 0, 5_000);
    first.state.hold!.release();
    second.state.hold!.release();
    await sleep(500);
    expect(first.state.starts.length + second.state.starts.length).toBe(1);
    expect(await a.platform.getTraining(launched.id)).toMatchObject({ status: 'cancelled', progress: 0.25, steps: { done: 1, total: 4 } });
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    const models = await pool.query('SELECT id FROM sandbox.models WHERE training_job_id = $1', [launched.id]);
    const balance = await pool.query<{ balance: string }>('SELECT balance::text AS balance FROM sandbox.account');
    await pool.end();
    expect(models.rows).toEqual([]);
    expect(balance.rows[0]!.balance).toBe((1000 - cancelled.priceChargedCredits!).toFixed(2));
  });

  it('a queued training (the supervisor is busy) is cancelled free and never started; a completed one answers 409', async () => {
    const { runId, start } = await setup();
    const trainer = testTrainer();
    trainer.holdNow();
    const { platform } = await start(trainer.trainer);
    const dataset = await platform.buildDataset({ runId }, 'ds');
    const busy = await platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE, epochs: 1 }, 'busy');
    const queued = await platform.launchTraining({ datasetId: dataset.id, baseModelId: BASE, epochs: 2 }, 'queued');
    await waitFor(() => trainer.state.starts.length === 1 || undefined);
    const cancelled = await platform.cancelTraining(queued.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', priceChargedCredits: 0, startedAt: null, progress: 0 });
    trainer.state.hold!.release();
    expect((await waitForTraining(platform, busy.id)).status).toBe('completed');
    await sleep(300);
    expect(trainer.state.starts.map((s) => s.jobId)).toEqual([busy.id]);

    const error = await platform.cancelTraining(busy.id).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ code: 'already_finished', status: 409 });
    expect((error as Error).message).toContain(`training ${busy.id} already completed`);
  });
});
