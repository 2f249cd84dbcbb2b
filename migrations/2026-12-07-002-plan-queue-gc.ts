// The live plan's job queues (`plan:<team>:<chat>`, one per chat with a plan) removed with the chat
// queues, under the same lock (migration 2026-12-07-001): its jobs are now enqueued by
// enqueue_scoped_job, which holds the shared lock, instead of graphile-worker's addJob, which cannot.
import { sql, type Kysely } from 'kysely';

const LOCK = sql.raw(`hashtext('verdict-bot:chat-job-queues')`);

export async function up(db: Kysely<any>): Promise<void> {
  // graphile_worker.add_job, holding the lock the clean-up of per-chat queues takes alone.
  await sql`
    create or replace function enqueue_scoped_job(identifier text, payload json, queue_name text, job_key text, job_key_mode text, run_at timestamptz, max_attempts int)
    returns void language plpgsql as $$
    begin
      perform pg_advisory_xact_lock_shared(${LOCK});
      perform graphile_worker.add_job(
        enqueue_scoped_job.identifier,
        enqueue_scoped_job.payload,
        queue_name => enqueue_scoped_job.queue_name,
        job_key => enqueue_scoped_job.job_key,
        job_key_mode => coalesce(enqueue_scoped_job.job_key_mode, 'replace'),
        run_at => coalesce(enqueue_scoped_job.run_at, now()),
        max_attempts => enqueue_scoped_job.max_attempts
      );
    end $$
  `.execute(db);
  await sql`
    create or replace function gc_empty_chat_queues(batch int)
    returns int language plpgsql as $$
    declare
      removed int;
    begin
      if not pg_try_advisory_xact_lock(${LOCK}) then
        return -1;
      end if;
      delete from graphile_worker._private_job_queues q
      using (
        select e.id from graphile_worker._private_job_queues e
        where (e.queue_name like 'chat:%' or e.queue_name like 'plan:%') and e.locked_at is null
          and not exists (select 1 from graphile_worker._private_jobs j where j.job_queue_id = e.id)
        limit batch
        for update skip locked
      ) empty
      where q.id = empty.id;
      get diagnostics removed = row_count;
      return removed;
    end $$
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists enqueue_scoped_job(text, json, text, text, text, timestamptz, int)`.execute(db);
  const { up: chatQueuesOnly } = await import('./2026-12-07-001-chat-queue-gc.js');
  await chatQueuesOnly(db);
}
