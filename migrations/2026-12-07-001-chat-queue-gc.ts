// Empty per-chat job queues are removed, safely. Each chat's turns run one at a time in a named
// graphile-worker queue, `chat:<id>`; graphile-worker 0.16 never deletes an empty queue, and every
// job fetch locks every queue that is not running a job (its `get_job`: `... in (select id from
// _private_job_queues where is_available for update skip locked)`). Each lock is a WAL record, so a
// job cost about 0.6 ms and 55 KB of WAL per thousand chats the bot had ever seen (30 ms and 2.8 MB
// at 50,000; bench/job-queues.ts, docs/performance.md), every turn, Home refresh and button job, and
// the acks' commits flush that WAL too.
//
// graphile-worker's own clean-up (GC_JOB_QUEUES) races with an enqueue: its delete can remove a
// queue between add_job's upsert of the queue and its insert of the job (the job is then lost, or
// refers to a queue that no longer exists and never runs). Here every enqueue into a chat queue
// holds a shared transaction lock, and the clean-up takes it exclusively, without waiting (it skips
// a round rather than hold up an ack), before it reads which queues are empty: no enqueue is then
// in flight, and none starts until it commits.
import { sql, type Kysely } from 'kysely';

/** The lock every enqueue into a `chat:` queue shares and the clean-up takes alone. */
const LOCK = sql.raw(`hashtext('verdict-bot:chat-job-queues')`);

export async function up(db: Kysely<any>): Promise<void> {
  // As in migration 2026-12-05-005, with the shared lock first.
  await sql`
    create or replace function enqueue_turn_jobs_quietly(trigger_ids text[], chat_ids text[], max_attempts int)
    returns int language plpgsql as $$
    declare
      added int;
    begin
      if coalesce(array_length(trigger_ids, 1), 0) = 0 then
        return 0;
      end if;
      perform pg_advisory_xact_lock_shared(${LOCK});
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
  // The notifying enqueue of one turn job (graphile_worker.add_job), under the same shared lock.
  await sql`
    create or replace function enqueue_turn_job(trigger_id text, chat_id text, max_attempts int)
    returns void language plpgsql as $$
    begin
      perform pg_advisory_xact_lock_shared(${LOCK});
      perform graphile_worker.add_job(
        'run_turn',
        json_build_object('triggerId', trigger_id),
        queue_name => 'chat:' || chat_id,
        job_key => 'trigger:' || trigger_id,
        max_attempts => enqueue_turn_job.max_attempts
      );
    end $$
  `.execute(db);
  // Removes up to `batch` empty chat queues that no job holds; -1 when an enqueue held the lock
  // (try again later). Its own statements read after the lock is taken (plpgsql, read committed).
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
        where e.queue_name like 'chat:%' and e.locked_at is null
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
  await sql`drop function if exists gc_empty_chat_queues(int)`.execute(db);
  await sql`drop function if exists enqueue_turn_job(text, text, int)`.execute(db);
  const { up: restoreQuietEnqueue } = await import('./2026-12-05-005-quiet-turn-jobs.js');
  await restoreQuietEnqueue(db);
}
