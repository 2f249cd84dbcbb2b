// Jobs other than a trigger's turn, added through graphile-worker's public SQL function add_job.
import { sql } from 'kysely';
import type { Db } from './db.js';

export interface JobSpec {
  identifier: string;
  payload: unknown;
  /** Jobs of one named queue run one at a time. */
  queueName?: string;
  /** At most one pending job per key; `replace` (the default) moves it to this payload and run time. */
  jobKey?: string;
  jobKeyMode?: 'replace' | 'preserve_run_at';
  runAt?: Date;
  maxAttempts: number;
}

/** Adds a job with graphile_worker.add_job, in the caller's transaction when `db` is one. */
export async function addJob(db: Db, job: JobSpec): Promise<void> {
  await sql`select graphile_worker.add_job(${job.identifier}::text, ${JSON.stringify(job.payload)}::json,
    queue_name => ${job.queueName ?? null}::text, run_at => ${job.runAt ?? null}::timestamptz, max_attempts => ${job.maxAttempts}::int,
    job_key => ${job.jobKey ?? null}::text, job_key_mode => ${job.jobKeyMode ?? 'replace'}::text)`.execute(db);
}
