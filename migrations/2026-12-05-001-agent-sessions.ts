// The thread as an agent session: a durable Stop (who pressed it, when, and the trigger that carries
// it out), so a process killed in the middle of a stop finishes it when the trigger is retried.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('chats')
    .addColumn('stopped_at', 'timestamptz')
    .addColumn('stopped_by', 'text')
    .addColumn('stop_trigger_id', 'bigint')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('chats').dropColumn('stop_trigger_id').dropColumn('stopped_by').dropColumn('stopped_at').execute();
}
