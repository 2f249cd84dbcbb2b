// Credits spent per person and per workspace over the cap period, counted from the recorded launches.
import { sql } from 'kysely';
import type { Db } from './db.js';

/** An allowed launch not recorded yet is counted this long (in flight); after that it failed or was lost. */
const IN_FLIGHT_MINUTES = 15;

export interface SpendingFigures {
  /** Credits the person spent in threads they started, in the period. */
  person: number;
  /** Credits the whole workspace spent in the period. */
  workspace: number;
}

/**
 * What a person and their workspace spent in the last `periodDays`: every launch recorded in the
 * period that did not fail (charged, or estimated while running), plus launches the spend guard
 * allowed in the last minutes whose launch is not recorded yet (`recordLaunch` marks it in the
 * transaction that records the resource). A launch counts against the person
 * who started its thread.
 */
export async function spendingInPeriod(db: Db, teamId: string, userId: string, periodDays: number): Promise<SpendingFigures> {
  const since = sql`now() - make_interval(days => ${periodDays}::int)`;
  const { rows } = await sql<{ person: string; workspace: string }>`
    with launched as (
      select c.owner_user_id as spender, coalesce(r.price_charged, r.price_estimate, 0) as credits
      from resources r join chats c on c.id = r.chat_id
      where r.team_id = ${teamId} and r.kind in ('run', 'dataset', 'training') and r.status <> 'failed' and r.created_at > ${since}
    ),
    in_flight as (
      select a.spender_user_id as spender, a.credits
      from launch_authorizations a
      where a.team_id = ${teamId} and a.credits > 0 and a.recorded_at is null
        and a.created_at > greatest(${since}, now() - make_interval(mins => ${IN_FLIGHT_MINUTES}::int))
    ),
    everything as (select * from launched union all select * from in_flight)
    select coalesce(sum(credits) filter (where spender = ${userId}), 0)::text as person,
           coalesce(sum(credits), 0)::text as workspace
    from everything`.execute(db);
  const row = rows[0];
  return { person: Number(row?.person ?? 0), workspace: Number(row?.workspace ?? 0) };
}

/** Serializes spend decisions of one workspace across every replica until the transaction ends. */
export async function lockWorkspaceSpending(trx: Db, teamId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${`spend:${teamId}`}))`.execute(trx);
}

/** Credits a thread has spent: every launch it recorded that did not fail, charged or else estimated. */
export async function chatSpentCredits(db: Db, teamId: string, chatId: string): Promise<number> {
  const row = await db
    .selectFrom('resources')
    .select(sql<string>`coalesce(sum(coalesce(price_charged, price_estimate, 0)), 0)`.as('spent'))
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .where('status', '!=', 'failed')
    .executeTakeFirstOrThrow();
  return Number(row.spent);
}
