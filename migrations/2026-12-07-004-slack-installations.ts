// Slack installations (OAuth mode): one row per workspace or Enterprise Grid organization, its tokens
// encrypted (src/store/installations.ts), and which organization each workspace of an org-wide install belongs to.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('slack_installations')
    // `T:<team id>` for a workspace install, `E:<enterprise id>` for an org-wide one.
    .addColumn('install_key', 'text', (c) => c.primaryKey())
    .addColumn('team_id', 'text')
    .addColumn('enterprise_id', 'text')
    .addColumn('is_enterprise_install', 'boolean', (c) => c.notNull())
    .addColumn('app_id', 'text')
    .addColumn('bot_user_id', 'text')
    .addColumn('bot_token_expires_at', 'timestamptz')
    // The whole Installation as JSON, AES-256-GCM: version byte, 12-byte IV, 16-byte tag, ciphertext.
    .addColumn('sealed', 'bytea', (c) => c.notNull())
    .addColumn('installed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('slack_enterprise_teams')
    .addColumn('team_id', 'text', (c) => c.primaryKey())
    .addColumn('enterprise_id', 'text', (c) => c.notNull())
    .addColumn('seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('slack_enterprise_teams_enterprise').on('slack_enterprise_teams').column('enterprise_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('slack_enterprise_teams').execute();
  await db.schema.dropTable('slack_installations').execute();
}
