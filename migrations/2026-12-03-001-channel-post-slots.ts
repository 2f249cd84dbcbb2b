// Per-channel post pacing shared by every replica: the time slot of the newest post reserved in
// each channel, so two bot processes posting to one channel still keep Slack's pace.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('channel_post_slots')
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('last_slot', 'timestamptz', (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addPrimaryKeyConstraint('channel_post_slots_pkey', ['team_id', 'channel_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('channel_post_slots').ifExists().execute();
}
