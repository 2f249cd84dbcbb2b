// Initial schema: chats, triggers, turns, messages, Slack posts, platform resources, activity.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('chats')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('thread_ts', 'text', (c) => c.notNull())
    .addColumn('owner_user_id', 'text', (c) => c.notNull())
    .addColumn('plan', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('chats_thread_key', ['team_id', 'channel_id', 'thread_ts'])
    .execute();

  await db.schema
    .createTable('triggers')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .addUniqueConstraint('triggers_dedupe', ['team_id', 'dedupe_key'])
    .execute();
  await db.schema.createIndex('triggers_chat').on('triggers').columns(['team_id', 'chat_id', 'id']).execute();

  await db.schema
    .createTable('turns')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('trigger_id', 'bigint', (c) => c.notNull().unique().references('triggers.id'))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('running'))
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('model_calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('input_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('output_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_read_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_write_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cost_usd', sql`numeric(18,10)`, (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('turns_chat').on('turns').columns(['team_id', 'chat_id', 'id']).execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('turn_id', 'bigint', (c) => c.references('turns.id'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('content', 'jsonb', (c) => c.notNull())
    .addColumn('stop_reason', 'text')
    .addColumn('usage', 'jsonb')
    .addColumn('attachments', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('messages_chat').on('messages').columns(['team_id', 'chat_id', 'id']).execute();

  await db.schema
    .createTable('posts')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('turn_id', 'bigint', (c) => c.references('turns.id'))
    .addColumn('post_key', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('thread_ts', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('slack_ts', 'text')
    .addColumn('permalink', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('posted_at', 'timestamptz')
    .addUniqueConstraint('posts_key', ['team_id', 'post_key'])
    .execute();
  await db.schema.createIndex('posts_chat').on('posts').columns(['team_id', 'chat_id', 'id']).execute();

  await db.schema
    .createTable('resources')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('turn_id', 'bigint', (c) => c.references('turns.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('plan_step', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('price_estimate', sql`numeric(14,4)`)
    .addColumn('price_charged', sql`numeric(14,4)`)
    .addColumn('web_url', 'text')
    .addColumn('details', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('notified_at', 'timestamptz')
    .addUniqueConstraint('resources_platform', ['kind', 'platform_id'])
    .execute();
  await db.schema.createIndex('resources_chat').on('resources').columns(['team_id', 'chat_id']).execute();
  await db.schema
    .createIndex('resources_in_flight')
    .on('resources')
    .columns(['status', 'updated_at'])
    .where(sql.ref('notified_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('activity')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('turn_id', 'bigint', (c) => c.notNull().unique().references('turns.id'))
    .addColumn('owner_user_id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('thread_ts', 'text', (c) => c.notNull())
    .addColumn('trigger_kind', 'text', (c) => c.notNull())
    .addColumn('trigger_label', 'text', (c) => c.notNull())
    .addColumn('summary', 'text', (c) => c.notNull())
    .addColumn('post_id', 'bigint', (c) => c.references('posts.id'))
    .addColumn('resources', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('agent_cost_usd', sql`numeric(18,10)`, (c) => c.notNull().defaultTo(0))
    .addColumn('credits_estimated', sql`numeric(14,4)`, (c) => c.notNull().defaultTo(0))
    .addColumn('credits_charged', sql`numeric(14,4)`, (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('activity_team_time').on('activity').columns(['team_id', 'id']).execute();
  await db.schema.createIndex('activity_owner_time').on('activity').columns(['team_id', 'owner_user_id', 'id']).execute();

  await db.schema
    .createTable('webhook_receipts')
    .addColumn('webhook_id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.createIndex('webhook_receipts_resource').on('webhook_receipts').column('resource_id').execute();
  await db.schema.createIndex('resources_team_time').on('resources').columns(['team_id', 'created_at']).execute();
  await db.schema.createIndex('turns_team_time').on('turns').columns(['team_id', 'started_at']).execute();

  await db.schema
    .createTable('worker_heartbeats')
    .addColumn('worker_id', 'text', (c) => c.primaryKey())
    .addColumn('process_id', 'text', (c) => c.notNull())
    .addColumn('last_seen', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['worker_heartbeats', 'webhook_receipts', 'activity', 'resources', 'posts', 'messages', 'turns', 'triggers', 'chats']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
