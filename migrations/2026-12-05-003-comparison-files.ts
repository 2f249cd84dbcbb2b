// The chart of a comparison post, uploaded once: its upload state per post (a crash or a retry
// finds the file it started), and the render level each post was delivered at (its fallback).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('comparison_files')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'bigint', (c) => c.notNull().references('chats.id'))
    .addColumn('post_id', 'bigint', (c) => c.notNull().references('posts.id').unique())
    // pending -> uploading (file_id known) -> shared | failed
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('file_id', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('comparison_files_open').on('comparison_files').columns(['team_id', 'chat_id']).where(sql.ref('state'), 'in', ['pending', 'uploading']).execute();
  await db.schema.alterTable('posts').addColumn('render_level', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('posts').dropColumn('render_level').execute();
  await db.schema.dropTable('comparison_files').ifExists().execute();
}
