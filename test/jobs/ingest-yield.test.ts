// The worker yields to ingest: while the web role acknowledges a burst, turns and Home refreshes run
// one at a time (never none); when it ends, at full concurrency again.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnDeps } from '../../src/agent/turn.js';
import { createIngestYield, INGEST_BUSY_PER_SECOND } from '../../src/jobs/ingest-yield.js';
import { PUBLISH_HOME_TASK } from '../../src/jobs/task-names.js';
import { createTaskList } from '../../src/jobs/tasks.js';
import { migrateJobEngine, startWorker } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createWorkerWaker } from '../../src/store/wake-workers.js';
import { createTestDatabase } from '../kit/database.js';
import { waitUntil } from '../kit/wait.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the ingest gate', () => {
  it('admits any number while ingest is quiet, one at a time while it is busy, all again when it ends', async () => {
    let now = 1_000_000;
    const gate = createIngestYield({ now: () => now });
    const quiet = await Promise.all([gate.admit(), gate.admit(), gate.admit()]);
    expect(gate.stats()).toEqual({ running: 3, waiting: 0 });
    for (const release of quiet) release();

    gate.observe(INGEST_BUSY_PER_SECOND);
    expect(gate.busy()).toBe(true);
    const first = await gate.admit();
    const admitted: number[] = [];
    const later = [1, 2, 3].map((n) => gate.admit().then((release) => (admitted.push(n), release)));
    await sleep(10);
    expect(gate.stats()).toEqual({ running: 1, waiting: 3 });
    // A release lets exactly the next one in, in order.
    first();
    await sleep(10);
    expect(admitted).toEqual([1]);
    expect(gate.stats()).toEqual({ running: 1, waiting: 2 });
    // The rate is over the last second: once it has passed with no acknowledgement, everyone runs.
    now += 1000;
    await waitUntil(() => (admitted.length === 3 ? true : undefined), 2_000, 'the waiting jobs after the burst');
    expect(gate.stats()).toEqual({ running: 3, waiting: 0 });
    for (const release of await Promise.all(later)) {
      release();
      release(); // twice is once
    }
    expect(gate.stats()).toEqual({ running: 0, waiting: 0 });
  });

  it('counts below the threshold as quiet, and lets every waiting job run when closed', async () => {
    const gate = createIngestYield();
    gate.observe(INGEST_BUSY_PER_SECOND - 1);
    expect(gate.busy()).toBe(false);
    gate.observe(1);
    expect(gate.busy()).toBe(true);
    const held = await gate.admit();
    const waiting = Promise.all([gate.admit(), gate.admit()]);
    await sleep(10);
    expect(gate.stats().waiting).toBe(2);
    gate.close();
    const released = await waiting;
    expect(gate.stats()).toEqual({ running: 3, waiting: 0 });
    for (const release of [held, ...released]) release();
  });
});

describe('a job waiting on another service', () => {
  it('gives its place up while it waits, and takes one again after, waiting its turn', async () => {
    const gate = createIngestYield();
    gate.observe(INGEST_BUSY_PER_SECOND * 10);
    const events: string[] = [];
    let answer: () => void = () => undefined;
    const modelCall = new Promise<void>((resolve) => {
      answer = resolve;
    });
    let bDone: () => void = () => undefined;
    const bHolds = new Promise<void>((resolve) => {
      bDone = resolve;
    });
    const a = gate.run(async () => {
      events.push('a starts');
      await gate.outside(async () => {
        events.push('a waits on the model');
        await modelCall;
      });
      events.push('a goes on');
    });
    await sleep(10);
    // B gets the place A gave up while A waits on the model.
    const b = gate.run(async () => {
      events.push('b starts');
      await bHolds;
      events.push('b ends');
    });
    await sleep(10);
    expect(events).toEqual(['a starts', 'a waits on the model', 'b starts']);
    // The answer comes while B holds the only place: A waits for it.
    answer();
    await sleep(20);
    expect(events).toEqual(['a starts', 'a waits on the model', 'b starts']);
    expect(gate.stats()).toEqual({ running: 1, waiting: 1 });
    bDone();
    await Promise.all([a, b]);
    expect(events).toEqual(['a starts', 'a waits on the model', 'b starts', 'b ends', 'a goes on']);
    expect(gate.stats()).toEqual({ running: 0, waiting: 0 });
    // Outside a job, `outside` just runs the call.
    expect(await gate.outside(async () => 42)).toBe(42);
    gate.close();
  });
});

describe('a worker yielding to the web role', () => {
  let handle: DbHandle;
  beforeAll(async () => {
    handle = createDb(await createTestDatabase('ingest_yield'), { max: 8 });
    await migrateToLatest(handle.db);
    await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
  });
  afterAll(() => handle.close());

  it('hears the web role\'s acknowledgements through its wake-ups, and runs jobs one at a time until the burst ends', async () => {
    const logger = pino({ level: 'silent' });
    const gate = createIngestYield();
    let active = 0;
    let done = 0;
    const peaks: { busy: boolean; active: number }[] = [];
    const worker = await startWorker({
      pool: handle.pool,
      db: handle.db,
      logger,
      concurrency: 4,
      staleSeconds: 5,
      pollIntervalMs: 200,
      onIngest: (count) => gate.observe(count),
      taskList: createTaskList({
        turn: {} as TurnDeps,
        logger,
        overdueSeconds: 60,
        eventRetryAttempts: 3,
        publishHome: async () => {
          active += 1;
          peaks.push({ busy: gate.busy(), active });
          await sleep(150);
          active -= 1;
          done += 1;
        },
        buttonFeedback: async () => undefined,
        gate,
      }),
    });
    try {
      // The web role acknowledges 500 events a second (ten times the threshold, so a loaded machine's
      // late timers do not end the burst early), in the wake-ups it sends after each commit.
      const waker = createWorkerWaker(handle.db, logger);
      let burst = true;
      const sending = (async () => {
        while (burst) {
          waker.wake(25);
          await sleep(50);
        }
      })();
      await waitUntil(() => (gate.busy() ? true : undefined), 5_000, 'the worker to hear the burst');
      for (let i = 0; i < 8; i += 1) await worker.utils.addJob(PUBLISH_HOME_TASK, { teamId: 'T1', userId: `U${i}` });
      await waitUntil(() => (done >= 3 ? true : undefined), 10_000, 'three jobs during the burst');
      burst = false;
      await sending;
      await waitUntil(() => (done === 8 ? true : undefined), 10_000, 'every job of the burst');
      await waitUntil(() => (gate.busy() ? undefined : true), 5_000, 'the burst to be over');
      for (let i = 0; i < 4; i += 1) await worker.utils.addJob(PUBLISH_HOME_TASK, { teamId: 'T1', userId: `U${8 + i}` });
      await waitUntil(() => (done === 12 ? true : undefined), 10_000, 'the jobs after the burst');
      // One at a time while the burst lasted; several at once after it.
      const during = peaks.filter((p) => p.busy);
      expect(during.length).toBeGreaterThanOrEqual(3);
      expect(Math.max(...during.map((p) => p.active))).toBe(1);
      expect(Math.max(...peaks.filter((p) => !p.busy).map((p) => p.active))).toBeGreaterThan(1);
    } finally {
      gate.close();
      await worker.stop();
    }
  });
});
