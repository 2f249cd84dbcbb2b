// Worker heartbeats: which job workers are alive, and which hold job locks without beating (crashed).
import { sql } from 'kysely';
import type { Db } from './db.js';

/** Records that these workers of this process are alive now. */
export async function beat(db: Db, processId: string, workerIds: readonly string[]): Promise<void> {
  if (workerIds.length === 0) return;
  await db
    .insertInto('worker_heartbeats')
    .values(workerIds.map((worker_id) => ({ worker_id, process_id: processId, last_seen: new Date() })))
    .onConflict((oc) => oc.column('worker_id').doUpdateSet({ last_seen: new Date() }))
    .execute();
}

/**
 * Workers holding a job lock older than `staleSeconds` that have not beaten within it: their process
 * died with the lock. Read from graphile-worker's public `jobs` view; a worker locks a job's named
 * queue together with the job, so its job locks name every worker to unlock
 * (`forceUnlockWorkers` frees both).
 */
export async function listSilentLockHolders(db: Db, staleSeconds: number): Promise<string[]> {
  const stale = `${Math.max(1, staleSeconds)} seconds`;
  const rows = await sql<{ locked_by: string }>`
    select distinct locked_by from graphile_worker.jobs
    where locked_by is not null
      and locked_at < now() - ${stale}::interval
      and locked_by not in (
        select worker_id from worker_heartbeats where last_seen > now() - ${stale}::interval
      )`.execute(db);
  return rows.rows.map((r) => r.locked_by);
}

/** Forgets heartbeats older than a day. */
export async function pruneHeartbeats(db: Db): Promise<void> {
  await db
    .deleteFrom('worker_heartbeats')
    .where('last_seen', '<', sql<Date>`now() - interval '1 day'`)
    .execute();
}
