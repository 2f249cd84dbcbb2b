// Launches the spend guard authorized, by tool call, written before the platform is called: a tool
// call run again after a crash repeats that launch with the same idempotency key instead of being
// judged again against a balance or budget its own first attempt already used.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('launch_authorizations')
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('turn_id', 'bigint', (c) => c.notNull().references('turns.id'))
    .addColumn('tool_use_id', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('plan_step', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('launch_authorizations_pkey', ['turn_id', 'tool_use_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('launch_authorizations').ifExists().execute();
}
