// The clean-up of empty per-chat job queues, the turns' (`chat:`) and the live plan's (`plan:`)
// (migrations 2026-12-07-001 and 002 say why and how it is safe).
import { sql } from 'kysely';
import type { Db } from './db.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Removes the per-chat queues (`chat:` and `plan:`) that hold no job, `batch` per transaction (each holds up enqueues for one
 * short delete), at most `rounds` transactions. A round that finds an enqueue in flight is tried
 * again a little later, up to `busyRetries` times in all; then the rest waits for the next sweep.
 * Returns how many queues were removed.
 */
export async function removeEmptyChatQueues(
  db: Db,
  options: { batch?: number; rounds?: number; busyRetries?: number; busyWaitMs?: number } = {},
): Promise<number> {
  const batch = options.batch ?? 500;
  const rounds = options.rounds ?? 20;
  let busy = options.busyRetries ?? 20;
  let removed = 0;
  for (let round = 0; round < rounds; ) {
    const { rows } = await sql<{ removed: number }>`select gc_empty_chat_queues(${batch}::int) as removed`.execute(db);
    const count = rows[0]!.removed;
    if (count < 0) {
      if (busy-- <= 0) break;
      await sleep(options.busyWaitMs ?? 25);
      continue;
    }
    removed += count;
    round += 1;
    if (count < batch) break;
  }
  return removed;
}

/**
 * Adds a job to a per-chat queue other than the turns' (the live plan's), as graphile-worker's
 * addJob does, holding the lock the clean-up takes (migration 2026-12-07-002).
 */
export async function enqueueScopedJob(
  db: Db,
  job: { identifier: string; payload: unknown; queueName: string; jobKey?: string; jobKeyMode?: 'replace' | 'preserve_run_at'; runAt?: Date; maxAttempts: number },
): Promise<void> {
  await sql`select enqueue_scoped_job(${job.identifier}::text, ${JSON.stringify(job.payload)}::json, ${job.queueName}::text,
    ${job.jobKey ?? null}::text, ${job.jobKeyMode ?? null}::text, ${job.runAt ?? null}::timestamptz, ${job.maxAttempts}::int)`.execute(db);
}
