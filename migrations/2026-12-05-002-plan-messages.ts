// The live plan message of each chat: the Slack message it is drawn in, what it last showed, and
// when Slack last took it (the pace of chat.update is kept from this across restarts and replicas).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('plan_messages')
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('thread_ts', 'text', (c) => c.notNull())
    .addColumn('slack_ts', 'text')
    // Attempts at posting it: after an uncertain one, the thread is searched before posting again.
    .addColumn('post_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('state', 'jsonb')
    .addColumn('text_only', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('written_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('plan_messages_pkey', ['team_id', 'chat_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('plan_messages').ifExists().execute();
}
