// Buttons act once: the choices a post offers (one per actions block) and the grant of each button,
// stored with the post in the outbox, so a click is judged against what the message really offered.
// Also the launch a grant or the caps allowed (credits, who spent) and a thread's recorded decision.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('button_choices')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('post_id', 'bigint', (c) => c.notNull().references('posts.id'))
    .addColumn('block_index', 'integer', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('claimed_at', 'timestamptz')
    .addColumn('chosen_grant_id', 'bigint')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('button_choices_block', ['post_id', 'block_index'])
    .execute();

  await db.schema
    .createTable('button_grants')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('choice_id', 'bigint', (c) => c.notNull().references('button_choices.id'))
    .addColumn('post_id', 'bigint', (c) => c.notNull().references('posts.id'))
    .addColumn('action_id', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('grant', 'jsonb', (c) => c.notNull())
    .addUniqueConstraint('button_grants_action', ['post_id', 'action_id'])
    .execute();
  await db.schema.createIndex('button_grants_choice').on('button_grants').column('choice_id').execute();
  // Clicks find their post by the message Slack shows.
  await db.schema.createIndex('posts_slack_ts').on('posts').columns(['team_id', 'channel_id', 'slack_ts']).execute();

  await db.schema
    .alterTable('launch_authorizations')
    .addColumn('credits', sql`numeric(14,4)`, (c) => c.notNull().defaultTo(0))
    .addColumn('spender_user_id', 'text')
    .addColumn('chat_id', 'bigint')
    .execute();
  await db.schema.createIndex('launch_authorizations_team_time').on('launch_authorizations').columns(['team_id', 'created_at']).execute();

  await db.schema.alterTable('chats').addColumn('decision', 'jsonb').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('chats').dropColumn('decision').execute();
  await db.schema.dropIndex('launch_authorizations_team_time').ifExists().execute();
  await db.schema.alterTable('launch_authorizations').dropColumn('credits').dropColumn('spender_user_id').dropColumn('chat_id').execute();
  await db.schema.dropIndex('posts_slack_ts').ifExists().execute();
  await db.schema.dropTable('button_grants').ifExists().execute();
  await db.schema.dropTable('button_choices').ifExists().execute();
}
