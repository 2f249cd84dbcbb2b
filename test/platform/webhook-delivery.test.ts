// Webhook delivery from the sandbox: signed events, retries while the receiver is down, and each webhook fault.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform, WebhookEvent } from '@verdict/contract/platform';
import type { SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { verifyWebhook } from '@verdict/contract/webhooks';
import { startReceiver, startTestSandbox, waitFor, waitForRun, waitForTraining, type Receiver } from './helpers.js';
import { sleep } from '../kit/wait.js';

let sandbox: SandboxHandle;
let platform: Platform;
let receiver: Receiver;
let db: pg.Client;
let keyCounter = 0;

beforeAll(async () => {
  receiver = await startReceiver();
  const started = await startTestSandbox({
    timeScale: 0.005,
    webhookUrl: receiver.url,
    webhookRetry: { baseDelayMs: 50, maxDelayMs: 200, maxAttempts: 8 },
  });
  ({ sandbox, platform } = started);
  db = new pg.Client(started.databaseUrl);
  await db.connect();
});

afterAll(async () => {
  await sandbox?.stop();
  await receiver?.stop();
  await db?.end();
});

function eventsFor(target: Receiver, resourceId: string): Array<WebhookEvent & { webhookId: string; receivedAt: number }> {
  return target.deliveries
    .map((d) => ({ ...verifyWebhook(sandbox.webhookSecret, d.body, d.headers), webhookId: String(d.headers['webhook-id']), receivedAt: d.receivedAt }))
    .filter((e) => e.data.id === resourceId);
}

async function outbox(resourceId: string) {
  const result = await db.query<{ status: string; attempts: number; deliveries: number; copies: number }>(
    'SELECT status, attempts, deliveries, copies FROM sandbox.webhook_outbox WHERE resource_id = $1',
    [resourceId],
  );
  return result.rows;
}

async function quickRun(modelId = 'qwen/Qwen2.5-0.5B-Instruct') {
  return platform.launchRun({ benchmarkId: '666', modelId }, `delivery-${++keyCounter}`);
}

describe('webhook delivery', () => {
  it('delivers a signed, thin run.completed event once', async () => {
    const run = await quickRun();
    const [event] = await waitFor(() => {
      const events = eventsFor(receiver, run.id);
      return events.length > 0 ? events : undefined;
    });
    expect(event).toMatchObject({ type: 'run.completed', data: { id: run.id } });
    expect(event!.webhookId).toBe(event!.id);
    expect((await platform.getRun(run.id)).status).toBe('completed');
    await sleep(200);
    expect(eventsFor(receiver, run.id)).toHaveLength(1);
    expect(await outbox(run.id)).toEqual([{ status: 'delivered', attempts: 0, deliveries: 1, copies: 1 }]);
  });

  it('delivers training.completed and run.failed events', async () => {
    const run = await quickRun();
    await waitForRun(platform, run.id);
    const dataset = await platform.buildDataset({ runId: run.id, augmentation: 1 }, `delivery-ds-${++keyCounter}`);
    const job = await platform.launchTraining(
      { datasetId: dataset.id, baseModelId: 'qwen/Qwen2.5-0.5B-Instruct', epochs: 1 },
      `delivery-tj-${keyCounter}`,
    );
    await waitForTraining(platform, job.id);
    const [trained] = await waitFor(() => eventsFor(receiver, job.id).length > 0 && eventsFor(receiver, job.id));
    expect(trained?.type).toBe('training.completed');

    sandbox.setFaults({ runFailureRate: 1 });
    const failing = await quickRun();
    sandbox.setFaults({});
    const [failed] = await waitFor(() => eventsFor(receiver, failing.id).length > 0 && eventsFor(receiver, failing.id));
    expect(failed?.type).toBe('run.failed');
    expect((await platform.getRun(failing.id)).status).toBe('failed');
  });

  it('retries while the receiver is down and delivers once it is up', async () => {
    const port = await freePort();
    await sandbox.setWebhookUrl(`http://127.0.0.1:${port}/hooks`);
    let late: Receiver | undefined;
    try {
      const run = await quickRun();
      await waitForRun(platform, run.id);
      await waitFor(async () => ((await outbox(run.id))[0]?.attempts ?? 0) >= 2);
      late = await startReceiver(port);
      const events = await waitFor(() => eventsFor(late!, run.id).length > 0 && eventsFor(late!, run.id));
      expect(events[0]?.type).toBe('run.completed');
      // The sender marks the row after the receiver's answer, a moment after the receiver saw it.
      const row = await waitFor(async () => {
        const [found] = await outbox(run.id);
        return found?.status === 'delivered' ? found : undefined;
      });
      expect(row.status).toBe('delivered');
      expect(row!.attempts).toBeGreaterThanOrEqual(2);
    } finally {
      await sandbox.setWebhookUrl(receiver.url);
      await late?.stop();
    }
  });

  it('retries a non-2xx answer, and gives up after the attempt limit', async () => {
    receiver.status = 500;
    const run = await quickRun();
    await waitFor(async () => ((await outbox(run.id))[0]?.attempts ?? 0) >= 1);
    receiver.status = 200;
    await waitFor(() => eventsFor(receiver, run.id).length > 0);
    // Marked delivered once the answer is back, a moment after the receiver saw the event.
    expect(await waitFor(async () => ((await outbox(run.id))[0]?.status === 'delivered' ? 'delivered' : undefined))).toBe('delivered');

    const broken = await startReceiver();
    broken.status = 503;
    await sandbox.setWebhookUrl(broken.url);
    try {
      const doomed = await quickRun();
      const rows = await waitFor(async () => {
        const found = await outbox(doomed.id);
        return found[0]?.status === 'failed' ? found : undefined;
      }, 10_000);
      expect(rows[0]?.attempts).toBe(8);
    } finally {
      await sandbox.setWebhookUrl(receiver.url);
      await broken.stop();
    }
  });

  it('drop: never sends the event', async () => {
    sandbox.setFaults({ webhookDrop: 1 });
    const run = await quickRun();
    await waitForRun(platform, run.id);
    sandbox.setFaults({});
    await sandbox.tick();
    await sleep(300);
    expect(eventsFor(receiver, run.id)).toHaveLength(0);
    expect((await outbox(run.id))[0]?.status).toBe('dropped');
  });

  it('duplicate: sends the same event 2 or 3 times, each validly signed', async () => {
    sandbox.setFaults({ webhookDuplicate: 1 });
    const run = await quickRun();
    await waitForRun(platform, run.id);
    sandbox.setFaults({});
    const [row] = await waitFor(async () => {
      const rows = await outbox(run.id);
      return rows[0]?.status === 'delivered' ? rows : undefined;
    });
    const events = eventsFor(receiver, run.id);
    expect([2, 3]).toContain(events.length);
    expect(events.length).toBe(row!.copies);
    expect(new Set(events.map((e) => e.id)).size).toBe(1);
  });

  it('delay: sends the event only after the configured delay', async () => {
    sandbox.setFaults({ webhookDelayMs: 800 });
    const run = await quickRun();
    const done = await waitForRun(platform, run.id);
    sandbox.setFaults({});
    const [event] = await waitFor(() => eventsFor(receiver, run.id).length > 0 && eventsFor(receiver, run.id));
    expect(event!.receivedAt - Date.parse(done.finishedAt!)).toBeGreaterThanOrEqual(800);
  });

  it('reorder: holds an event back until a later one was delivered', async () => {
    sandbox.setFaults({ webhookReorder: 1, webhookReorderMaxHoldMs: 20_000 });
    const first = await quickRun();
    await waitForRun(platform, first.id);
    sandbox.setFaults({ webhookReorderMaxHoldMs: 20_000 });
    await sleep(150);
    expect(eventsFor(receiver, first.id)).toHaveLength(0);
    const second = await quickRun('qwen/Qwen2.5-1.5B-Instruct');
    const [held] = await waitFor(() => eventsFor(receiver, first.id).length > 0 && eventsFor(receiver, first.id));
    const [later] = eventsFor(receiver, second.id);
    expect(later).toBeDefined();
    expect(later!.receivedAt).toBeLessThanOrEqual(held!.receivedAt);
    expect(receiver.deliveries.findIndex((d) => d.body.includes(second.id))).toBeLessThan(
      receiver.deliveries.findIndex((d) => d.body.includes(first.id)),
    );
    sandbox.setFaults({});
  });
});
