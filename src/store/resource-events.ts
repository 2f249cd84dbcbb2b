// A platform event (webhook, sweep, or a receipt that beat its launch) becomes a trigger and its resource is marked notified.
import { sql, type RawBuilder } from 'kysely';
import type { FinishedStatus } from '@verdict/contract/contract';
import type { Db } from './db.js';
import type { ResourceKind } from './tables.js';
import { addJobFromInserted } from './triggers.js';

/** A finished resource's status: completed, failed or cancelled (@verdict/contract/contract). */
export type ResourceOutcome = FinishedStatus;

/** One trigger per resource outcome, whether a webhook (even redelivered) or the sweep reports it. */
export function resourceEventKey(kind: ResourceKind, platformId: string, outcome: ResourceOutcome): string {
  return `event:${kind}:${platformId}:${outcome}`;
}

/**
 * The one place an event becomes a trigger. From a CTE named `res` (columns ord, id, team_id,
 * chat_id, kind, resource_id, type, webhook_id, dedupe_key: one row per event for a resource this
 * bot launched), stores one trigger per resource outcome (the lowest `ord` wins; an outcome already
 * stored is left alone), enqueues its turn, and marks the resources notified. Defines the CTEs
 * `inserted` (id, chat_id, team_id, dedupe_key), `job` and `notified`; the caller must read `job`
 * (an unread select CTE is skipped).
 */
function eventTriggerCtes(kind: 'platform_event' | 'reconcile', maxAttempts: number): RawBuilder<unknown> {
  return sql`inserted as (
      insert into triggers (team_id, chat_id, kind, dedupe_key, user_id, payload)
      select distinct on (team_id, dedupe_key) team_id, chat_id, ${kind}::text, dedupe_key, null,
        jsonb_strip_nulls(jsonb_build_object('type', type, 'resourceKind', kind, 'resourceId', resource_id, 'webhookId', webhook_id))
      from res order by team_id, dedupe_key, ord
      on conflict on constraint triggers_dedupe do nothing
      returning id, chat_id, team_id, dedupe_key
    ),
    job as (${addJobFromInserted(maxAttempts)}),
    notified as (
      update resources set notified_at = now()
      where id in (select id from res) and notified_at is null
      returning id
    )`;
}

export type PlatformEventOutcome = 'enqueued' | 'duplicate' | 'unknown';

export interface PlatformEventInput {
  webhookId: string;
  type: string;
  kind: 'run' | 'training';
  resourceId: string;
  outcome: ResourceOutcome;
}

export interface PlatformEventResult {
  outcome: PlatformEventOutcome;
  teamId?: string;
  triggerId?: string;
}

/**
 * Ingests verified platform webhooks in one statement: records each id (redeliveries stop here),
 * finds the chat that launched each resource, stores one trigger per resource outcome (shared with
 * the sweep) with its job, and marks the resources notified. Results are in input order; of several
 * deliveries of one webhook id, or several ids for one resource outcome, the first is `enqueued`
 * and the others `duplicate`.
 */
export async function ingestPlatformEvents(
  db: Db,
  events: readonly PlatformEventInput[],
  options: { maxAttempts: number },
): Promise<PlatformEventResult[]> {
  if (events.length === 0) return [];
  // One row per webhook id: a redelivery inside the batch is answered like one after it.
  const firstOf = new Map<string, number>();
  const unique: PlatformEventInput[] = [];
  for (const event of events) {
    if (!firstOf.has(event.webhookId)) {
      firstOf.set(event.webhookId, unique.length);
      unique.push(event);
    }
  }
  // A synchronous commit, like Slack events': a 200 means the event is stored. Batching keeps that
  // affordable (one WAL flush per batch rather than per delivery).
  const result = await sql<{ ord: string; fresh: boolean; team_id: string | null; trigger_id: string | null }>`
    with input as (
      select * from unnest(
        ${unique.map((e) => e.webhookId)}::text[],
        ${unique.map((e) => e.type)}::text[],
        ${unique.map((e) => e.kind)}::text[],
        ${unique.map((e) => e.resourceId)}::text[],
        ${unique.map((e) => resourceEventKey(e.kind, e.resourceId, e.outcome))}::text[]
      ) with ordinality as i(webhook_id, type, kind, resource_id, dedupe_key, ord)
    ),
    receipt as (
      -- In id order, so two batches holding the same redelivered ids lock them in the same order.
      insert into webhook_receipts (webhook_id, type, resource_id)
      select webhook_id, type, resource_id from input order by webhook_id
      on conflict (webhook_id) do nothing
      returning webhook_id
    ),
    res as (
      select i.ord, r.id, r.team_id, r.chat_id, i.kind, i.resource_id, i.type, i.webhook_id, i.dedupe_key
      from input i join resources r on r.kind = i.kind and r.platform_id = i.resource_id
      where i.webhook_id in (select webhook_id from receipt)
    ),
    ${eventTriggerCtes('platform_event', options.maxAttempts)},
    counts as (
      select (select count(*) from job) as jobs, (select count(*) from notified) as notified
    )
    select i.ord::text as ord,
           i.webhook_id in (select webhook_id from receipt) as fresh,
           res.team_id,
           ins.id::text as trigger_id,
           -- Selected so that the job part runs (an unread CTE is skipped).
           counts.jobs, counts.notified
    from input i
    cross join counts
    left join res on res.ord = i.ord
    left join inserted ins on ins.team_id = res.team_id and ins.dedupe_key = res.dedupe_key
    order by i.ord
  `.execute(db);
  const claimed = new Set<string>();
  const uniqueResults = result.rows.map((row): PlatformEventResult => {
    if (!row.fresh) return { outcome: 'duplicate' };
    if (!row.team_id) return { outcome: 'unknown' };
    // Several fresh ids for one resource outcome: the trigger belongs to the first.
    if (row.trigger_id && !claimed.has(row.trigger_id)) {
      claimed.add(row.trigger_id);
      return { outcome: 'enqueued', teamId: row.team_id, triggerId: row.trigger_id };
    }
    return { outcome: 'duplicate', teamId: row.team_id };
  });
  if (uniqueResults.length !== unique.length) throw new Error(`ingest returned ${uniqueResults.length} rows for ${unique.length} events`);
  const answered = new Set<string>();
  return events.map((event): PlatformEventResult => {
    if (answered.has(event.webhookId)) return { outcome: 'duplicate' };
    answered.add(event.webhookId);
    return uniqueResults[firstOf.get(event.webhookId)!]!;
  });
}

/**
 * The sweep's finding, in one statement: a resource whose finish event never arrived has finished,
 * so its outcome becomes a `reconcile` trigger (unless a webhook's already exists) and the resource
 * is marked notified. Returns whether a new trigger was stored.
 */
export async function enqueueSweptOutcome(
  db: Db,
  resource: { teamId: string; id: string; kind: 'run' | 'training'; platformId: string },
  outcome: ResourceOutcome,
  options: { maxAttempts: number },
): Promise<{ created: boolean }> {
  const { rows } = await sql<{ created: string; jobs: string }>`
    with res as (
      select 1 as ord, r.id, r.team_id, r.chat_id, r.kind, r.platform_id as resource_id,
        ${`${resource.kind}.${outcome}`}::text as type, null::text as webhook_id,
        ${resourceEventKey(resource.kind, resource.platformId, outcome)}::text as dedupe_key
      from resources r where r.team_id = ${resource.teamId} and r.id = ${resource.id}
    ),
    ${eventTriggerCtes('reconcile', options.maxAttempts)}
    select (select count(*) from inserted) as created, (select count(*) from job) as jobs, (select count(*) from notified) as notified
  `.execute(db);
  return { created: Number(rows[0]?.created ?? 0) > 0 };
}

/**
 * A fast resource can finish, and its webhook arrive, before its launch is recorded: the route kept
 * the receipt but found no chat. Once the launch is recorded, the earliest such receipt becomes the
 * resource's `platform_event` trigger (after the current turn of its chat), in one statement; a
 * resource already notified is left alone. Returns the event type enqueued, if any.
 */
export async function claimEarlyReceipt(
  db: Db,
  resource: { teamId: string; kind: 'run' | 'training'; platformId: string },
  options: { maxAttempts: number },
): Promise<string | undefined> {
  const { rows } = await sql<{ type: string | null; created: string; jobs: string }>`
    with res as (
      select 1 as ord, r.id, r.team_id, r.chat_id, r.kind, r.platform_id as resource_id, w.type, w.webhook_id,
        case when w.type like '%.completed' then ${resourceEventKey(resource.kind, resource.platformId, 'completed')}::text
             when w.type like '%.cancelled' then ${resourceEventKey(resource.kind, resource.platformId, 'cancelled')}::text
             else ${resourceEventKey(resource.kind, resource.platformId, 'failed')}::text end as dedupe_key
      from webhook_receipts w
      join resources r on r.platform_id = w.resource_id and r.kind = ${resource.kind}
      where w.resource_id = ${resource.platformId} and w.type like ${`${resource.kind}.%`}
        and r.team_id = ${resource.teamId} and r.notified_at is null
      order by w.received_at, w.webhook_id
      limit 1
    ),
    ${eventTriggerCtes('platform_event', options.maxAttempts)}
    select (select type from res) as type, (select count(*) from inserted) as created,
           (select count(*) from job) as jobs, (select count(*) from notified) as notified
  `.execute(db);
  const row = rows[0];
  return row && Number(row.created) > 0 && row.type ? row.type : undefined;
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
