// The resource a tool call launched, found by its tool-use id (kept in `details`): the spend guard
// asks it of every launch allowed in the last minutes, under the workspace's spend lock, and a
// resumed turn asks it of its own launches. Without this index each question scanned the
// workspace's resources: 1,000 loops in flight made every launch wait seconds for that lock.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists resources_tool_call on resources (team_id, turn_id, (details->>'toolUseId'))`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists resources_tool_call`.execute(db);
}
