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
    q('jobs', sql`select id, task_identifier as task, queue_name, locked_by, attempts, max_attempts,
        round(extract(epoch from (run_at - now()))::numeric, 1) as run_in_s, left(last_error, 120) as last_error, key
      from graphile_worker.jobs order by id`),
    q('heartbeats', sql`select worker_id, process_id, round(extract(epoch from (now() - last_seen))::numeric, 1) as age_s from worker_heartbeats`),
    q('triggers', sql`select id, kind, status, left(error, 80) as error from triggers order by id`),
    q('posts', sql`select id, post_key, status, attempts, slack_ts is not null as delivered from posts order by id`),
    q('activity', sql`select pid, state, wait_event_type, wait_event, round(extract(epoch from (now() - xact_start))::numeric, 1) as xact_s, left(query, 100) as query
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`),
  ]);
  return parts.join('\n');
}
