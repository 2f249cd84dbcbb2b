// The bot's jobs, triggers, posts and connections, printed when a scenario stalls.
import { sql } from 'kysely';
import type { Db } from '../src/store/db.js';

/** The bot's job, trigger, post and connection state, for the report of a scenario that stalled. */
export async function stateDump(db: Db): Promise<string> {
  const q = async (label: string, query: ReturnType<typeof sql>) => {
    try {
      const { rows } = await query.execute(db);
      return `${label}: ${JSON.stringify(rows)}`;
    } catch (error) {
      return `${label}: (${(error as Error).message})`;
    }
  };
  const parts = await Promise.all([
    q('jobs', sql`select j.id, t.identifier as task, q.queue_name, j.locked_by, j.attempts, j.max_attempts,
        round(extract(epoch from (j.run_at - now()))::numeric, 1) as run_in_s, left(j.last_error, 120) as last_error, j.key
      from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
      left join graphile_worker._private_job_queues q on q.id = j.job_queue_id order by j.id`),
    q('queues', sql`select queue_name, locked_by, locked_at from graphile_worker._private_job_queues where locked_by is not null`),
    q('heartbeats', sql`select worker_id, process_id, round(extract(epoch from (now() - last_seen))::numeric, 1) as age_s from worker_heartbeats`),
    q('triggers', sql`select id, kind, status, left(error, 80) as error from triggers order by id`),
    q('posts', sql`select id, post_key, status, attempts, slack_ts is not null as delivered from posts order by id`),
    q('activity', sql`select pid, state, wait_event_type, wait_event, round(extract(epoch from (now() - xact_start))::numeric, 1) as xact_s, left(query, 100) as query
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`),
  ]);
  return parts.join('\n');
}
