// Feedback on a verdict: one vote (positive or negative) per person per verdict message, changed by
// a later click, tied to the turn that wrote the verdict so the Activity log shows it on that line.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('verdict_feedback')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('turn_id', 'bigint', (c) => c.notNull().references('turns.id'))
    .addColumn('post_id', 'bigint', (c) => c.notNull().references('posts.id'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('vote', 'text', (c) => c.notNull().check(sql`vote in ('positive', 'negative')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('verdict_feedback_one_vote', ['post_id', 'user_id'])
    .execute();
  await db.schema.createIndex('verdict_feedback_turn').on('verdict_feedback').columns(['team_id', 'turn_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('verdict_feedback').ifExists().execute();
}
