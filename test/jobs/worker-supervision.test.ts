// The job engine survives a database outage that kills a worker: graphile-worker 0.16 drops a worker
// for good when it cannot record a job's end; the bot must replace it, or turns stop for ever.
import { rm } from 'node:fs/promises';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startPrivatePostgres } from '../kit/database.js';
import { freePortOutsideEphemeralRange } from '../kit/ports.js';
import { migrateJobEngine, startWorker, type WorkerHandle } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '@verdict/runtime/embedded-postgres';
import { waitUntil } from '../kit/wait.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('job workers and a database outage', () => {
  it('replaces a worker that died releasing its job while Postgres was down, and runs later jobs', async () => {
    const port = await freePortOutsideEphemeralRange();
    const postgres = await startPrivatePostgres({ port, folderPrefix: 'verdict-worker-pg-' });
    cleanups.push(() => rm(postgres.dir, { recursive: true, force: true }));
    const dataDir = postgres.dataDir;
    let server: EmbeddedDatabase = postgres.server;
    cleanups.push(() => server.stop());
    const url = server.urlFor('postgres');
    const handle: DbHandle = createDb(url, { max: 6, onError: () => undefined });
    cleanups.push(() => handle.close());
    const logger = pino({ level: 'silent' });
    await migrateToLatest(handle.db);
    await migrateJobEngine(handle.pool, logger);

    let stoppedOnce = false;
    const ran: number[] = [];
    const worker: WorkerHandle = await startWorker({
      pool: handle.pool,
      db: handle.db,
      logger,
      concurrency: 1,
      staleSeconds: 1,
      pollIntervalMs: 200,
      taskList: {
        // Takes the database away while its job runs, so the job's end cannot be recorded.
        outage: async () => {
          if (stoppedOnce) return;
          stoppedOnce = true;
          await server.stop();
        },
        mark: async (payload) => {
          ran.push((payload as { n: number }).n);
        },
      },
    });
    cleanups.push(() => worker.stop());
    const firstIds = worker.workerIds();
    expect(firstIds).toHaveLength(1);

    await worker.utils.addJob('outage', {});
    await waitUntil(() => (stoppedOnce ? true : undefined), 20_000, 'the outage job to run');
    // The only worker could not complete its job and left the pool.
    await waitUntil(() => (worker.workerIds().length === 0 || !worker.workerIds().includes(firstIds[0]!) ? true : undefined), 20_000, 'the worker to die');
    await new Promise((resolve) => setTimeout(resolve, 500));
    server = await startEmbeddedPostgres({ dataDir, port });

    await waitUntil(async () => worker.utils.addJob('mark', { n: 1 }).then(() => true, () => undefined), 30_000, 'a job to be accepted again');
    await waitUntil(() => (ran.includes(1) ? true : undefined), 30_000, 'a job added after the outage to run');
    expect(worker.workerIds()).toHaveLength(1);
    expect(worker.workerIds()[0]).not.toBe(firstIds[0]);
  }, 120_000);
});
