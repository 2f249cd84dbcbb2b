// Platform resources (runs, datasets, trainings) a chat started, and which chat a platform event belongs to.
import { sql } from 'kysely';
import type { Db } from './db.js';
import type { FinishedStatus } from '../platform/contract.js';
import type { Resource, ResourceKind } from './tables.js';

/** One trigger per resource outcome, whether a webhook (even redelivered) or the sweep reports it. */
export function resourceEventKey(kind: ResourceKind, platformId: string, outcome: FinishedStatus): string {
  return `event:${kind}:${platformId}:${outcome}`;
}

export async function findResourceByPlatformId(db: Db, kind: ResourceKind, platformId: string): Promise<Resource | undefined> {
  // Platform ids are global: this lookup is how an event finds its workspace; everything after is scoped.
  return db.selectFrom('resources').selectAll().where('kind', '=', kind).where('platform_id', '=', platformId).executeTakeFirst();
}

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
  await db
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
    .onConflict((oc) => oc.constraint('resources_platform').doNothing())
    .execute();
  return db
    .selectFrom('resources')
    .selectAll()
    .where('team_id', '=', input.teamId)
    .where('kind', '=', input.kind)
    .where('platform_id', '=', input.platformId)
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

export async function markResourceNotified(db: Db, teamId: string, id: string): Promise<void> {
  await db
    .updateTable('resources')
    .set({ notified_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where('notified_at', 'is', null)
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
 * Undoes an event that arrived before its resource finished: the resource is un-notified (the sweep
 * looks at it again) and the early trigger releases its dedupe key, so the real finish, by webhook
 * or sweep, starts a turn.
 */
export async function rearmResourceEvent(db: Db, teamId: string, resourceId: string, triggerId: string): Promise<void> {
  await sql`
    with resource as (
      update resources set notified_at = null where team_id = ${teamId} and id = ${resourceId} returning id
    )
    update triggers set dedupe_key = dedupe_key || ':early:' || id::text
    where team_id = ${teamId} and id = ${triggerId} and dedupe_key not like '%:early:%'
  `.execute(db);
}
