// Jobs are added through graphile-worker's public add_job only: the functions of migrations
// 2026-12-05-005, 2026-12-06-001, 2026-12-07-001 and 2026-12-07-002, which wrote its private tables
// or wrapped add_job under a lock for the clean-up of empty per-chat queues, are dropped. graphile-worker
// owns its schema; its private tables may change in any release.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists ingest_slack_triggers(text[], text[], text[], text[], boolean[], text[], text[], text[], jsonb[], int)`.execute(db);
  await sql`drop function if exists enqueue_turn_jobs_quietly(text[], text[], int)`.execute(db);
  await sql`drop function if exists enqueue_turn_job(text, text, int)`.execute(db);
  await sql`drop function if exists enqueue_scoped_job(text, json, text, text, text, timestamptz, int)`.execute(db);
  await sql`drop function if exists gc_empty_chat_queues(int)`.execute(db);
}

export async function down(_db: Kysely<any>): Promise<void> {
  // Nothing to restore: the functions it drops are not created by any migration any more.
}
