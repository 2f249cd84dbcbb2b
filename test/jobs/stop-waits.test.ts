// Stopping waits for the background work the worker role started on its own: a heartbeat or a sweep
// queueing still in flight when stop() returned failed on the closed pool and logged after the bot
// had stopped (it ended a test run with an uncaught 'write after end' in the harness's log file).
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scheduleReconcileSweep } from '../../src/jobs/reconcile.js';
import { migrateJobEngine, startWorker } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createTestDatabase } from '../kit/database.js';
import { captureLogs } from '../kit/log-capture.js';
import { sleep, waitUntil } from '../kit/wait.js';

/** Settles to true once `promise` has settled, for asserting it is still pending. */
function settledFlag(promise: Promise<unknown>): { readonly settled: boolean } {
  const flag = { settled: false };
  void promise.finally(() => {
    flag.settled = true;
  });
  return flag;
}

let url: string;
beforeAll(async () => {
  url = await createTestDatabase('stopwait');
  const handle = createDb(url);
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
  await handle.close();
});

describe('stopping the job engine', () => {
  let handle: DbHandle | undefined;
  let locker: pg.Client | undefined;
  afterAll(async () => {
    await locker?.end().catch(() => undefined);
    await handle?.close().catch(() => undefined);
  });

  it('waits for a heartbeat in flight, and nothing is logged after it returned', async () => {
    handle = createDb(url, { max: 4 });
    const { logger, lines } = captureLogs();
    // staleSeconds 1: a beat every 333 ms.
    const worker = await startWorker({ pool: handle.pool, db: handle.db, logger, concurrency: 1, staleSeconds: 1, pollIntervalMs: 200, taskList: {} });
    expect(worker.workerIds()).toHaveLength(1);

    // Another session holds the heartbeat table, so the next beat waits on its lock.
    locker = new pg.Client(url);
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table worker_heartbeats in access exclusive mode');
    await waitUntil(
      async () => {
        const { rows } = await locker!.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%worker_heartbeats%' and pid <> pg_backend_pid()",
        );
        return rows[0]!.n > 0 ? true : undefined;
      },
      10_000,
      'a heartbeat waiting on the lock',
      20,
    );

    const stopping = worker.stop();
    const stop = settledFlag(stopping);
    await sleep(600);
    expect(stop.settled, 'stop() returned while its heartbeat was still running').toBe(false);

    await locker.query('rollback');
    await stopping;
    const stoppedAt = Date.now();
    await handle.close();
    handle = undefined;
    await sleep(300);
    expect(lines.filter((l) => Number(l.time) > stoppedAt)).toEqual([]);
    expect(lines.map((l) => l.msg)).not.toContain('worker heartbeat failed');
  }, 30_000);
});

describe('the reconcile sweep schedule', () => {
  it('stop() waits for a queueing in flight, and queues no more after', async () => {
    const { logger, lines } = captureLogs();
    let calls = 0;
    let release: (() => void) | undefined;
    const sweep = scheduleReconcileSweep({
      cron: '* * * * * *',
      enqueue: () => {
        calls += 1;
        // The first queueing hangs (a database slow to answer) until the test releases it.
        return calls === 1 ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve();
      },
      logger,
    });
    await waitUntil(() => (release ? true : undefined), 5_000, 'the first scheduled queueing', 20);

    const stopping = sweep.stop();
    const stop = settledFlag(stopping);
    await sleep(300);
    expect(stop.settled, 'stop() returned while a queueing was in flight').toBe(false);
    release!();
    await stopping;

    const callsAtStop = calls;
    await sleep(1_500);
    expect(calls).toBe(callsAtStop);
    expect(lines).toEqual([]);
  }, 20_000);

  it('a queueing that fails is logged as a warning, and the schedule goes on', async () => {
    const { logger, lines } = captureLogs();
    let calls = 0;
    const sweep = scheduleReconcileSweep({
      cron: '* * * * * *',
      enqueue: () => {
        calls += 1;
        return Promise.reject(new Error('database unavailable'));
      },
      logger,
    });
    try {
      await waitUntil(() => (calls >= 2 ? true : undefined), 5_000, 'two scheduled queueings', 20);
    } finally {
      await sweep.stop();
    }
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatchObject({ level: 40, msg: 'could not schedule the reconcile sweep', err: { message: 'database unavailable' } });
  }, 20_000);
});
