// Cancelling simulated runs and trainings over real HTTP: status, charge for what was done, exact ledger, signed event, no later progress.
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundCredits, type WebhookEvent } from '@verdict/contract/contract';
import { PlatformError } from '@verdict/contract/errors';
import type { Platform, Run } from '@verdict/contract/platform';
import type { SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { verifyWebhook } from '@verdict/contract/webhooks';
import { sleep } from '../kit/wait.js';
import { startReceiver, startTestSandbox, waitFor, waitForRun, type Receiver } from './helpers.js';

const MODEL = 'qwen/Qwen2.5-0.5B-Instruct';

let sandbox: SandboxHandle;
let platform: Platform;
let receiver: Receiver;
let db: pg.Pool;

beforeAll(async () => {
  receiver = await startReceiver();
  // A 100-question run takes 6 s here, a training at least 15 s: time to cancel them mid-way.
  const test = await startTestSandbox({ timeScale: 0.1, webhookUrl: receiver.url }, { retries: 8 });
  ({ sandbox, platform } = test);
  db = new pg.Pool({ connectionString: test.databaseUrl, max: 2 });
});

afterAll(async () => {
  await sandbox?.stop();
  await receiver?.stop();
  await db?.end();
});

function events(): WebhookEvent[] {
  return receiver.deliveries.map((d) => verifyWebhook(sandbox.webhookSecret, d.body, d.headers));
}

async function ledger(): Promise<string> {
  return (await db.query<{ balance: string }>('SELECT balance::text AS balance FROM sandbox.account')).rows[0]!.balance;
}

async function outboxTypes(resourceId: string): Promise<string[]> {
  const rows = await db.query<{ type: string }>('SELECT type FROM sandbox.webhook_outbox WHERE resource_id = $1 ORDER BY seq', [resourceId]);
  return rows.rows.map((r) => r.type);
}

async function rejection(promise: Promise<unknown>): Promise<PlatformError> {
  const error = await promise.then(
    () => new Error('expected a PlatformError'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PlatformError);
  return error as PlatformError;
}

async function runningFor(id: string, ms: number): Promise<Run> {
  await waitFor(async () => (await platform.getRun(id)).status === 'running');
  await sleep(ms);
  return platform.getRun(id);
}

describe('cancelling a simulated run', () => {
  it('mid-way: cancelled, charged the share of questions answered, reservation released, ledger exact, signed run.cancelled, no later progress', async () => {
    const before = await platform.getBalance();
    const launched = await platform.launchRun({ benchmarkId: '104', modelId: MODEL }, 'cancel-mid');
    expect((await platform.getBalance()).reservedCredits).toBe(launched.priceCredits);
    const mid = await runningFor(launched.id, 1_500);
    expect(mid.progress!.done).toBeGreaterThan(0);

    const cancelled = await platform.cancelRun(launched.id);
    expect(cancelled).toMatchObject({ id: launched.id, status: 'cancelled', score: null, categoryScores: null, errorMessage: null, estimatedFinishAt: null });
    expect(cancelled.finishedAt).not.toBeNull();
    const done = cancelled.progress!.done;
    expect(done).toBeGreaterThanOrEqual(mid.progress!.done);
    expect(done).toBeLessThan(100);
    expect(cancelled.chargedCredits).toBe(roundCredits((launched.priceCredits * done) / 100));
    expect(cancelled.chargedCredits!).toBeGreaterThan(0);
    expect(cancelled.chargedCredits!).toBeLessThan(launched.priceCredits);

    const after = await platform.getBalance();
    expect(after.reservedCredits).toBe(0);
    expect(after.balanceCredits).toBe(roundCredits(before.balanceCredits - cancelled.chargedCredits!));
    expect(after.availableCredits).toBe(after.balanceCredits);
    expect(await ledger()).toBe((before.balanceCredits - cancelled.chargedCredits!).toFixed(2));

    const event = await waitFor(() => events().find((e) => e.data.id === launched.id));
    expect(event.type).toBe('run.cancelled');

    // Past the run's planned end: nothing moves, nothing more is charged or sent.
    await sleep(5_000);
    await sandbox.tick();
    expect(await platform.getRun(launched.id)).toEqual(cancelled);
    expect(await ledger()).toBe((before.balanceCredits - cancelled.chargedCredits!).toFixed(2));
    expect(await outboxTypes(launched.id)).toEqual(['run.cancelled']);
    const results = await rejection(platform.listRunResults(launched.id));
    expect(results).toMatchObject({ code: 'invalid_request', status: 422 });
  }, 30_000);

  it('cancelling twice answers the cancelled run again (200), charges once and sends one event; retried through injected 429/503', async () => {
    const launched = await platform.launchRun({ benchmarkId: '104', modelId: MODEL }, 'cancel-twice');
    await runningFor(launched.id, 300);
    const balance = await ledger();
    sandbox.setFaults({ apiErrorRate: 0.5, apiErrorOnly: `POST /api/v1/runs/${launched.id}/cancel`, retryAfterSeconds: 0 });
    const first = await platform.cancelRun(launched.id);
    const second = await platform.cancelRun(launched.id);
    sandbox.setFaults({});
    expect(first.status).toBe('cancelled');
    expect(second).toEqual(first);
    const raw = await request(`${sandbox.url}/api/v1/runs/${launched.id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Token ${sandbox.token}` },
    });
    expect(raw.statusCode).toBe(200);
    expect(((await raw.body.json()) as { status: string }).status).toBe('cancelled');
    expect(await ledger()).toBe((Number(balance) - first.chargedCredits!).toFixed(2));
    await sandbox.tick();
    expect(await outboxTypes(launched.id)).toEqual(['run.cancelled']);
  }, 30_000);

  it('a queued run cancelled before it starts is charged nothing', async () => {
    // Its own platform, where runs queue for 10 s.
    const slow = await startTestSandbox({ timeScale: 5 });
    try {
      const launched = await slow.platform.launchRun({ benchmarkId: '104', modelId: MODEL }, 'cancel-queued');
      expect(launched.status).toBe('queued');
      const cancelled = await slow.platform.cancelRun(launched.id);
      expect(cancelled).toMatchObject({ status: 'cancelled', chargedCredits: 0, startedAt: null, progress: { done: 0, total: 100 } });
      expect(await slow.platform.getBalance()).toMatchObject({ balanceCredits: 1000, reservedCredits: 0, availableCredits: 1000 });
    } finally {
      await slow.sandbox.stop();
    }
  });

  it('a completed run answers 409 already_finished and keeps its charge; an unknown run is 404', async () => {
    const launched = await platform.launchRun({ benchmarkId: '666', modelId: MODEL }, 'cancel-finished');
    const completed = await waitForRun(platform, launched.id, 20_000);
    expect(completed.status).toBe('completed');
    const balance = await ledger();
    const error = await rejection(platform.cancelRun(launched.id));
    expect(error).toMatchObject({ code: 'already_finished', status: 409, retryable: false });
    expect(error.message).toContain(`run ${launched.id} already completed`);
    expect(await platform.getRun(launched.id)).toEqual(completed);
    expect(await ledger()).toBe(balance);
    expect(await rejection(platform.cancelRun('run_999999'))).toMatchObject({ code: 'not_found', status: 404 });
    expect(await rejection(platform.cancelTraining('tj_999999'))).toMatchObject({ code: 'not_found', status: 404 });
  }, 30_000);
});

describe('cancelling a simulated training', () => {
  it('mid-way: cancelled, charged its progress x the estimate, no model produced, signed training.cancelled, no later progress; then 200 again', async () => {
    const run = await platform.launchRun({ benchmarkId: '104', modelId: MODEL }, 'train-base');
    expect((await waitForRun(platform, run.id, 30_000)).status).toBe('completed');
    const dataset = await platform.buildDataset({ runId: run.id }, 'train-ds');
    const estimate = await platform.estimateTraining({ datasetId: dataset.id, baseModelId: MODEL });
    const before = await ledger();
    const launched = await platform.launchTraining({ datasetId: dataset.id, baseModelId: MODEL }, 'train-cancel');
    expect((await platform.getBalance()).reservedCredits).toBe(estimate.priceCredits);
    await waitFor(async () => (await platform.getTraining(launched.id)).progress >= 0.1, 20_000);

    const cancelled = await platform.cancelTraining(launched.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', producedModelId: null, errorMessage: null, estimatedFinishAt: null });
    expect(cancelled.progress).toBeGreaterThanOrEqual(0.1);
    expect(cancelled.progress).toBeLessThan(1);
    expect(cancelled.priceChargedCredits).toBe(roundCredits(estimate.priceCredits * cancelled.progress));
    expect(cancelled.priceChargedCredits!).toBeLessThan(estimate.priceCredits);
    expect(await ledger()).toBe((Number(before) - cancelled.priceChargedCredits!).toFixed(2));
    const balance = await platform.getBalance();
    expect(balance.reservedCredits).toBe(0);

    const event = await waitFor(() => events().find((e) => e.data.id === launched.id));
    expect(event.type).toBe('training.cancelled');

    await sleep(2_000);
    await sandbox.tick();
    expect(await platform.getTraining(launched.id)).toEqual(cancelled);
    expect(await platform.cancelTraining(launched.id)).toEqual(cancelled);
    expect(await ledger()).toBe((Number(before) - cancelled.priceChargedCredits!).toFixed(2));
    expect(await outboxTypes(launched.id)).toEqual(['training.cancelled']);
    const models = await db.query('SELECT id FROM sandbox.models WHERE training_job_id = $1', [launched.id]);
    expect(models.rows).toEqual([]);
  }, 60_000);
});
