// Turn jobs enqueued without a NOTIFY inside the transaction that acknowledges a Slack event or a
// webhook. Postgres serializes every committing transaction that issued a NOTIFY on one lock held
// through its WAL flush; graphile-worker's add_job always notifies, so under load the ack's commit
// queued behind the worker's own add_job commits ("Lock:object" waits, measured in
// bench/slack-ack.ts). This function writes the same rows as graphile_worker.add_job (graphile-worker
// 0.16's schema: a task, a named queue per chat, a job keyed by its trigger) and notifies nothing;
// the web role wakes the workers right after the commit, off the ack's path (src/store/wake-workers.ts).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function enqueue_turn_jobs_quietly(trigger_ids text[], chat_ids text[], max_attempts int)
    returns int language plpgsql as $$
    declare
      added int;
    begin
      if coalesce(array_length(trigger_ids, 1), 0) = 0 then
        return 0;
      end if;
      insert into graphile_worker._private_tasks (identifier) values ('run_turn') on conflict do nothing;
      insert into graphile_worker._private_job_queues (queue_name)
        select distinct 'chat:' || c from unnest(chat_ids) as c on conflict do nothing;
      insert into graphile_worker._private_jobs (job_queue_id, task_id, payload, run_at, max_attempts, key, priority)
        select q.id, t.id, json_build_object('triggerId', i.trigger_id), now(), enqueue_turn_jobs_quietly.max_attempts, 'trigger:' || i.trigger_id, 0
        from unnest(trigger_ids, chat_ids) as i(trigger_id, chat_id)
        join graphile_worker._private_tasks t on t.identifier = 'run_turn'
        join graphile_worker._private_job_queues q on q.queue_name = 'chat:' || i.chat_id
        on conflict (key) do nothing;
      get diagnostics added = row_count;
      return added;
    end $$
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists enqueue_turn_jobs_quietly(text[], text[], int)`.execute(db);
}
