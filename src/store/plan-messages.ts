// The live plan message of a chat: its Slack ts, what it last showed, and when Slack last took it.
import { sql } from 'kysely';
import type { Db } from './db.js';
import type { PlanMessageRow } from './tables.js';

export interface PlanMessageState {
  row: PlanMessageRow | undefined;
  /** Milliseconds until the message may be written again (0 when it may be now), on the database's clock. */
  paceWaitMs: number;
  /** Milliseconds until the workspace slot reserved for its next write (0 when due or past); undefined when none is held. */
  slotWaitMs: number | undefined;
}

/**
 * The chat's plan message with its waits, in one read: the pace of this message (`intervalMs` after
 * its last write) and its reserved workspace slot. A reservation older than `slotValidMs` was left by
 * a job that never came back for it (its chat stopped changing, its write failed): it is ignored.
 */
export async function readPlanMessage(db: Db, teamId: string, chatId: string, intervalMs: number, slotValidMs: number): Promise<PlanMessageState> {
  const row = await db
    .selectFrom('plan_messages')
    .selectAll()
    .select([
      sql<number | null>`greatest(0, extract(epoch from (written_at + make_interval(secs => ${intervalMs / 1000}::float8) - clock_timestamp())) * 1000)::float8`.as('pace_wait_ms'),
      sql<number | null>`case when slot_at >= clock_timestamp() - make_interval(secs => ${slotValidMs / 1000}::float8)
        then greatest(0, extract(epoch from (slot_at - clock_timestamp())) * 1000)::float8 end`.as('slot_wait_ms'),
    ])
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .executeTakeFirst();
  if (!row) return { row: undefined, paceWaitMs: 0, slotWaitMs: undefined };
  const { pace_wait_ms, slot_wait_ms, ...rest } = row;
  return { row: rest, paceWaitMs: Number(pace_wait_ms ?? 0), slotWaitMs: slot_wait_ms === null ? undefined : Number(slot_wait_ms) };
}

/** The chat's row, created on first use; each call counts one attempt at posting the message. */
export async function countPlanPostAttempt(
  db: Db,
  chat: { teamId: string; chatId: string; channelId: string; threadTs: string },
): Promise<number> {
  const row = await db
    .insertInto('plan_messages')
    .values({ team_id: chat.teamId, chat_id: chat.chatId, channel_id: chat.channelId, thread_ts: chat.threadTs, post_attempts: 1 })
    .onConflict((oc) => oc.columns(['team_id', 'chat_id']).doUpdateSet({ post_attempts: sql`plan_messages.post_attempts + 1` }))
    .returning('post_attempts')
    .executeTakeFirstOrThrow();
  return row.post_attempts;
}

/**
 * Records what Slack took: the message's ts (set once), the state it shows and the time of the write;
 * a reserved slot is used up.
 */
export async function recordPlanWrite(
  db: Db,
  teamId: string,
  chatId: string,
  write: { slackTs: string; state: unknown; textOnly: boolean },
): Promise<void> {
  await db
    .updateTable('plan_messages')
    .set({ slack_ts: write.slackTs, state: JSON.stringify(write.state), text_only: write.textOnly, written_at: sql`clock_timestamp()`, slot_at: null })
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .execute();
}

/**
 * Reserves the next free write slot under `key` (shared by the workspace's plan messages, one every
 * `intervalMs`) for this chat, however far ahead, and records it on the chat's row: returns the wait
 * until it. The slots are handed out in order, so with many plans in one workspace each waits its
 * turn once, rather than every waiting plan asking again at every free slot. One statement: the
 * slot row's lock orders concurrent reservations, on the database's clock.
 */
export async function reserveUpdateSlot(db: Db, teamId: string, chatId: string, key: string, intervalMs: number): Promise<number> {
  const { rows } = await sql<{ wait_ms: number }>`
    with slot as (
      insert into channel_post_slots as s (team_id, channel_id, last_slot)
      values (${teamId}, ${key}, clock_timestamp())
      on conflict (team_id, channel_id) do update
        set last_slot = greatest(clock_timestamp(), s.last_slot + make_interval(secs => ${intervalMs / 1000}::float8))
      returning s.last_slot
    )
    update plan_messages set slot_at = (select last_slot from slot)
    where team_id = ${teamId} and chat_id = ${chatId}
    returning greatest(0, extract(epoch from (slot_at - clock_timestamp())) * 1000)::float8 as wait_ms`.execute(db);
  return Number(rows[0]?.wait_ms ?? 0);
}

/**
 * After Slack answered a write of `key` with 429: no {@link claimWrite} of it succeeds before
 * `retryAfterMs` from now, whichever sync tries it (the last write is moved forward in time).
 */
export async function holdWrites(db: Db, teamId: string, key: string, intervalMs: number, retryAfterMs: number): Promise<void> {
  const until = sql`clock_timestamp() + make_interval(secs => ${(retryAfterMs - intervalMs) / 1000}::float8)`;
  await sql`
    insert into channel_post_slots as s (team_id, channel_id, last_slot)
    values (${teamId}, ${key}, ${until})
    on conflict (team_id, channel_id) do update set last_slot = greatest(s.last_slot, excluded.last_slot)`.execute(db);
}

/**
 * Claims the next actual write under `key`: when the last one was at least `intervalMs` ago, records
 * now and returns 0; otherwise returns the milliseconds until one may be made. Reserved slots keep
 * the writes in order; this keeps them apart when slots are used late (their jobs waited for a
 * worker), so a late one never lands on the next one's.
 */
export async function claimWrite(db: Db, teamId: string, key: string, intervalMs: number): Promise<number> {
  const { rows } = await sql<{ wait_ms: number }>`
    with claimed as (
      insert into channel_post_slots as s (team_id, channel_id, last_slot)
      values (${teamId}, ${key}, clock_timestamp())
      on conflict (team_id, channel_id) do update set last_slot = clock_timestamp()
        where s.last_slot <= clock_timestamp() - make_interval(secs => ${intervalMs / 1000}::float8)
      returning 0::float8 as wait_ms
    )
    select wait_ms from claimed
    union all
    select greatest(1, extract(epoch from (last_slot + make_interval(secs => ${intervalMs / 1000}::float8) - clock_timestamp())) * 1000)::float8
      from channel_post_slots where team_id = ${teamId} and channel_id = ${key} and not exists (select 1 from claimed)`.execute(db);
  return Number(rows[0]?.wait_ms ?? 0);
}
