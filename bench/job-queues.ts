// What a job fetch costs as finished chats leave their queues behind, and after the sweep removes
// them (src/store/job-queues.ts, migration 2026-12-07-001). graphile-worker's fetch locks every
// queue not running a job, one WAL record each: the bench leaves N chats' queues empty (as N
// finished turns do), runs JOBS trivial turn jobs through a real graphile-worker runner, one at a
// time, and prints the time and the WAL per job; then removes the empty queues and runs them again.
import pino from 'pino';
import { Logger, run } from 'graphile-worker';
import { sql } from 'kysely';
import { migrateDatabase } from '../src/app.js';
import { createDb, type DbHandle } from '../src/store/db.js';
import { removeEmptyChatQueues } from '../src/store/job-queues.js';
import { addTurnJob } from '../src/store/triggers.js';
import { envNumber, fmt, isMain, report } from './stats.js';
import { startPostgres } from './postgres.js';

const JOBS = envNumber('BENCH_JOB_QUEUES_JOBS', 200);
const SIZES = (process.env.BENCH_JOB_QUEUES_SIZES ?? '0,10000,50000').split(',').map(Number);

async function walLsn(handle: DbHandle): Promise<string> {
  return (await sql<{ lsn: string }>`select pg_current_wal_insert_lsn()::text as lsn`.execute(handle.db)).rows[0]!.lsn;
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
      run_turn: async () => {
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
  console.log(`job-queues: ${JOBS} turn jobs one at a time through graphile-worker, with N finished chats' queues left empty, then after the sweep`);
  const postgres = await startPostgres();
  try {
    for (const size of SIZES) {
      const handle = createDb(await postgres.createDatabase('queues'), { max: 4 });
      await migrateDatabase(handle, pino({ level: 'warn' }));
      await sql`insert into graphile_worker._private_job_queues (queue_name) select 'chat:finished-' || g from generate_series(1, ${size}::int) g`.execute(handle.db);
      const left = await runJobs(handle, 'a');
      const start = performance.now();
      const removed = await removeEmptyChatQueues(handle.db, { rounds: Number.POSITIVE_INFINITY });
      const sweepMs = performance.now() - start;
      const swept = await runJobs(handle, 'b');
      report(
        `${size} empty chat queues`,
        `left: ${fmt(left.ms, 2)} ms and ${fmt(left.walBytes / 1024, 1)} KB of WAL per job; ` +
          `swept (${removed} removed in ${fmt(sweepMs / 1000, 2)} s): ${fmt(swept.ms, 2)} ms and ${fmt(swept.walBytes / 1024, 1)} KB per job`,
      );
      await handle.close();
    }
  } finally {
    await postgres.stop();
  }
}

if (isMain(import.meta.url)) await main();
