// When the launch a spend decision allowed was recorded as a resource: the spend guard counts only
// the allowed launches not recorded yet as in flight, through a partial index, instead of matching
// every launch of the last minutes to the workspace's resources under the workspace's spend lock.
// Decisions whose launch is already recorded (found by its tool call) are marked here.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launch_authorizations').addColumn('recorded_at', 'timestamptz').execute();
  await sql`
    update launch_authorizations a set recorded_at = r.created_at
    from resources r
    where r.team_id = a.team_id and r.turn_id = a.turn_id and r.details->>'toolUseId' = a.tool_use_id`.execute(db);
  await sql`create index launch_authorizations_unrecorded on launch_authorizations (team_id, created_at) where recorded_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists launch_authorizations_unrecorded`.execute(db);
  await db.schema.alterTable('launch_authorizations').dropColumn('recorded_at').execute();
}
