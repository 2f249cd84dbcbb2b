// A thread as an agent session: the durable Stop, what is still working on the platform, and what
// the thread waits on (for the session status Slack shows).
import { sql } from 'kysely';
import type { Db } from './db.js';
import type { Resource } from './tables.js';

export interface StopRecord {
  stoppedAt: Date;
  stoppedBy: string;
  /** The trigger that carries the stop out; a later Stop of the same thread is the same stop. */
  triggerId: string;
}

/**
 * Marks the chat stopped unless it already is, and returns the stop that stands (the first one).
 * The write is durable before anything is cancelled, so a stop interrupted by a crash is finished
 * when its trigger is retried, and no automatic launch is allowed meanwhile.
 */
export async function claimStop(db: Db, teamId: string, chatId: string, input: { userId: string; triggerId: string }): Promise<StopRecord> {
  const { rows } = await sql<{ stopped_at: Date; stopped_by: string; stop_trigger_id: string }>`
    update chats set stopped_at = coalesce(stopped_at, now()), stopped_by = coalesce(stopped_by, ${input.userId}),
      stop_trigger_id = coalesce(stop_trigger_id, ${input.triggerId}::bigint), updated_at = now()
    where team_id = ${teamId} and id = ${chatId}
    returning stopped_at, stopped_by, stop_trigger_id::text as stop_trigger_id`.execute(db);
  const row = rows[0];
  if (!row) throw new Error(`chat ${chatId} of team ${teamId} not found`);
  return { stoppedAt: row.stopped_at, stoppedBy: row.stopped_by, triggerId: row.stop_trigger_id };
}

/** A person's new message after a Stop starts the thread again: plan steps may be launched once more. */
export async function clearStop(db: Db, teamId: string, chatId: string): Promise<void> {
  await db
    .updateTable('chats')
    .set({ stopped_at: null, stopped_by: null, stop_trigger_id: null, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', chatId)
    .execute();
}

/**
 * Runs and trainings of the chat the platform has not reported finished, and those that finished
 * since `since` (the stop): a stop retried after a crash reports again what it had cancelled.
 */
export async function listWorkingResources(db: Db, teamId: string, chatId: string, since?: Date): Promise<Resource[]> {
  return db
    .selectFrom('resources')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .where('kind', 'in', ['run', 'training'])
    .where((eb) => (since ? eb.or([eb('finished_at', 'is', null), eb('finished_at', '>=', since)]) : eb('finished_at', 'is', null)))
    .orderBy('id')
    .execute();
}

/**
 * Closes every button of the chat nobody has chosen yet: a click on one afterwards is answered
 * "already chosen" and does nothing. Returns how many choices were closed.
 */
export async function closeOpenChoices(db: Db, teamId: string, chatId: string, by: string): Promise<number> {
  const result = await db
    .updateTable('button_choices')
    .set({ claimed_by: by, claimed_at: new Date() })
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .where('claimed_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** What the session status of a chat depends on. */
export interface SessionFacts {
  stopped: boolean;
  /** Runs and trainings still working on the platform. */
  working: number;
  /** An Approve button nobody has pressed yet. */
  awaitingApproval: boolean;
}

export async function sessionFacts(db: Db, teamId: string, chatId: string): Promise<SessionFacts> {
  const { rows } = await sql<{ stopped: boolean; working: string; awaiting: boolean }>`
    select (c.stopped_at is not null) as stopped,
      (select count(*) from resources r where r.team_id = c.team_id and r.chat_id = c.id
         and r.kind in ('run', 'training') and r.finished_at is null) as working,
      exists (select 1 from button_choices ch join button_grants g on g.choice_id = ch.id
         where ch.team_id = c.team_id and ch.chat_id = c.id and ch.claimed_at is null and g."grant"->>'kind' = 'approve') as awaiting
    from chats c where c.team_id = ${teamId} and c.id = ${chatId}`.execute(db);
  const row = rows[0];
  return { stopped: row?.stopped ?? false, working: Number(row?.working ?? 0), awaitingApproval: row?.awaiting ?? false };
}

/** Credits charged for the chat's runs and trainings, and what its turns cost in agent USD. */
export async function chatCosts(db: Db, teamId: string, chatId: string): Promise<{ credits: number; agentUsd: number }> {
  const { rows } = await sql<{ credits: string | null; usd: string | null }>`
    select (select sum(price_charged) from resources where team_id = ${teamId} and chat_id = ${chatId}) as credits,
           (select sum(cost_usd) from turns where team_id = ${teamId} and chat_id = ${chatId}) as usd`.execute(db);
  return { credits: Number(rows[0]?.credits ?? 0), agentUsd: Number(rows[0]?.usd ?? 0) };
}
