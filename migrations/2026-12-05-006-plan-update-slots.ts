// A chat's reserved turn among its workspace's plan updates: with many plans running in one
// workspace, each waits for its own slot instead of all of them asking again at every free one.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('plan_messages').addColumn('slot_at', 'timestamptz').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('plan_messages').dropColumn('slot_at').execute();
}
