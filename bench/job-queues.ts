// What a job fetch costs as finished chats leave their queues behind. Each chat's turns run in a named
// graphile-worker queue, `chat:<id>`, and graphile-worker 0.16 keeps a queue once it is empty; its job
// fetch locks every queue not running a job (one WAL record each). The bench leaves N chats' queues
// empty, through the public API (add_jobs, then completeJobs, as N finished turns do), runs JOBS trivial
// turn jobs through a real runner, one at a time, and prints the time and the WAL per job.
import pino from 'pino';
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import { sql } from 'kysely';
import { migrateDatabase } from '../src/app.js';
import { RUN_TURN_TASK } from '../src/jobs/task-names.js';
import { createDb, type DbHandle } from '../src/store/db.js';
import { addTurnJob } from '../src/store/triggers.js';
import { envNumber, fmt, isMain, report } from './stats.js';
import { startPostgres } from './postgres.js';

const JOBS = envNumber('BENCH_JOB_QUEUES_JOBS', 200);
const SIZES = (process.env.BENCH_JOB_QUEUES_SIZES ?? '0,10000,50000').split(',').map(Number);

async function walLsn(handle: DbHandle): Promise<string> {
  return (await sql<{ lsn: string }>`select pg_current_wal_insert_lsn()::text as lsn`.execute(handle.db)).rows[0]!.lsn;
}

/** N chat queues left empty: a job added to each, then completed. */
async function leaveEmptyQueues(handle: DbHandle, count: number): Promise<void> {
  const utils = await makeWorkerUtils({ pgPool: handle.pool, logger: new Logger(() => () => undefined) });
  try {
    for (let from = 0; from < count; from += 5000) {
      const size = Math.min(5000, count - from);
      const { rows } = await sql<{ id: string }>`
        select id::text from graphile_worker.add_jobs(array(
          select row(${RUN_TURN_TASK}::text, '{}'::json, 'chat:finished-' || g, null, 1, null, null, null)::graphile_worker.job_spec
          from generate_series(${from + 1}::int, ${from + size}::int) g))`.execute(handle.db);
      await utils.completeJobs(rows.map((r) => r.id));
    }
  } finally {
    await utils.release();
  }
}

/** Runs JOBS turn jobs, each in a chat queue of its own, through a real runner; ms and WAL bytes per job. */
async function runJobs(handle: DbHandle, tag: string): Promise<{ ms: number; walBytes: number }> {
  let done = 0;
  let finished: () => void = () => undefined;
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  for (let i = 0; i < JOBS; i += 1) await addTurnJob(handle.db, `live-${tag}-${i}`, `${tag}${i}`);
  const before = await walLsn(handle);
  const start = performance.now();
  const runner = await run({
    pgPool: handle.pool,
    concurrency: 1,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: new Logger(() => () => undefined),
    taskList: {
      [RUN_TURN_TASK]: async () => {
        done += 1;
        if (done === JOBS) finished();
      },
    },
  });
  await allDone;
  const ms = performance.now() - start;
  await runner.stop();
  const after = await walLsn(handle);
  const walBytes = Number((await sql<{ d: string }>`select pg_wal_lsn_diff(${after}::pg_lsn, ${before}::pg_lsn)::text as d`.execute(handle.db)).rows[0]!.d);
  return { ms: ms / JOBS, walBytes: walBytes / JOBS };
}

export async function main(): Promise<void> {
  console.log(`job-queues: ${JOBS} turn jobs one at a time through graphile-worker, with N finished chats' queues left empty`);
  const postgres = await startPostgres();
  try {
    for (const size of SIZES) {
      const handle = createDb(await postgres.createDatabase('queues'), { max: 4 });
      await migrateDatabase(handle, pino({ level: 'warn' }));
      await leaveEmptyQueues(handle, size);
      const cost = await runJobs(handle, 'a');
      report(`${size} empty chat queues`, `${fmt(cost.ms, 2)} ms and ${fmt(cost.walBytes / 1024, 1)} KB of WAL per job`);
      await handle.close();
    }
  } finally {
    await postgres.stop();
  }
}

if (isMain(import.meta.url)) await main();
