// Platform resources (runs, datasets, trainings, comparisons) a chat started: recorded, updated, looked up.
import { sql } from 'kysely';
import type { Db } from './db.js';
import type { Resource, ResourceKind } from './tables.js';

export async function findResourceByPlatformId(db: Db, kind: ResourceKind, platformId: string): Promise<Resource | undefined> {
  // Platform ids are global: this lookup is how an event finds its workspace; everything after is scoped.
  return db.selectFrom('resources').selectAll().where('kind', '=', kind).where('platform_id', '=', platformId).executeTakeFirst();
}

/** Records a resource once (by kind and platform id) and returns it as stored. */
export async function upsertResource(
  db: Db,
  input: {
    teamId: string;
    chatId: string;
    turnId: string | null;
    kind: ResourceKind;
    platformId: string;
    planStep: string | null;
    status: string;
    priceEstimate: number | null;
    webUrl: string | null;
    details?: Record<string, unknown>;
  },
): Promise<Resource> {
  return db
    .insertInto('resources')
    .values({
      team_id: input.teamId,
      chat_id: input.chatId,
      turn_id: input.turnId,
      kind: input.kind,
      platform_id: input.platformId,
      plan_step: input.planStep,
      status: input.status,
      price_estimate: input.priceEstimate,
      web_url: input.webUrl,
      details: JSON.stringify(input.details ?? {}),
    })
    // Recorded already (a resumed turn): the row as it stands, unchanged; another team's is not returned.
    .onConflict((oc) =>
      oc
        .constraint('resources_platform')
        .doUpdateSet((eb) => ({ updated_at: eb.ref('resources.updated_at') }))
        .where('resources.team_id', '=', input.teamId),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateResourceStatus(
  db: Db,
  teamId: string,
  id: string,
  update: { status: string; priceCharged?: number | null; finished?: boolean; details?: Record<string, unknown> },
): Promise<void> {
  await db
    .updateTable('resources')
    .set({
      status: update.status,
      updated_at: new Date(),
      ...(update.priceCharged !== undefined ? { price_charged: update.priceCharged } : {}),
      ...(update.finished ? { finished_at: new Date() } : {}),
      ...(update.details ? { details: sql`details || ${JSON.stringify(update.details)}::jsonb` as never } : {}),
    })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .execute();
}

export async function listChatResources(db: Db, teamId: string, chatId: string): Promise<Resource[]> {
  return db.selectFrom('resources').selectAll().where('team_id', '=', teamId).where('chat_id', '=', chatId).orderBy('id').execute();
}

/** Runs and trainings still waiting for their finish event after `overdueSeconds` (for the sweep). */
export async function listOverdueResources(db: Db, overdueSeconds: number, limit = 500): Promise<Resource[]> {
  return db
    .selectFrom('resources')
    .selectAll()
    .where('notified_at', 'is', null)
    .where('kind', 'in', ['run', 'training'])
    .where('updated_at', '<', sql<Date>`now() - make_interval(secs => ${overdueSeconds})`)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

/**
 * The resource this very tool call launched (its tool-use id is stored in `details`), if it was
 * recorded before the turn was interrupted.
 */
export async function findResourceOfToolCall(
  db: Db,
  call: { teamId: string; chatId: string; turnId: string; toolUseId: string },
  kind: ResourceKind,
): Promise<Resource | undefined> {
  return db
    .selectFrom('resources')
    .selectAll()
    .where('team_id', '=', call.teamId)
    .where('chat_id', '=', call.chatId)
    .where('turn_id', '=', call.turnId)
    .where('kind', '=', kind)
    .where(sql<string>`details->>'toolUseId'`, '=', call.toolUseId)
    .executeTakeFirst();
}
