// Wakes the job workers after a commit that enqueued turn jobs quietly (no NOTIFY inside it; see
// migrations/2026-12-05-005-quiet-turn-jobs.ts): one NOTIFY of its own, outside the acknowledged
// transaction, coalesced so a burst of acks costs one notification at a time.
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { relaxedCommitFrom, type Db } from './db.js';

export interface WorkerWaker {
  /** Asks for `count` idle workers to look for jobs now; returns at once. */
  wake(count: number): void;
}

/**
 * At most one NOTIFY in flight; wakes asked for meanwhile are summed into the next one. A failed
 * NOTIFY loses nothing: the jobs are committed, and the workers' poll (graphile-worker's
 * `pollInterval`) finds them.
 */
export function createWorkerWaker(db: Db, logger: Pick<Logger, 'warn'>): WorkerWaker {
  let pending = 0;
  let sending = false;
  const send = (): void => {
    if (sending || pending === 0) return;
    const count = pending;
    pending = 0;
    sending = true;
    // graphile-worker's listener reads `count`: nudge up to that many idle workers. `ingest` tells
    // the workers these are acknowledged events, so they yield to a burst (src/jobs/ingest-yield.ts).
    // Committed relaxed (no wait for the WAL flush; the notification is delivered at commit all
    // the same): a NOTIFY's transaction gets a transaction id, so a durable one cost an fsync per
    // wake-up, in the same WAL flush queue as the next acknowledged commit.
    void sql`select pg_notify('jobs:insert', ${JSON.stringify({ r: Math.random(), count, ingest: true })}) from ${relaxedCommitFrom(db)}`
      .execute(db)
      .catch((error: unknown) => logger.warn({ err: error }, 'could not wake the job workers; they find the new jobs at their next poll'))
      .finally(() => {
        sending = false;
        send();
      });
  };
  return {
    wake(count) {
      if (count <= 0) return;
      pending += count;
      send();
    },
  };
}
