// The live plan message of a chat: its Slack ts, what it last showed, and when Slack last took it.
import { sql } from 'kysely';
import type { Db } from './db.js';
import type { PlanMessageRow } from './tables.js';

export async function getPlanMessage(db: Db, teamId: string, chatId: string): Promise<PlanMessageRow | undefined> {
  return db.selectFrom('plan_messages').selectAll().where('team_id', '=', teamId).where('chat_id', '=', chatId).executeTakeFirst();
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

/** Records what Slack took: the message's ts (set once), the state it shows and the time of the write. */
export async function recordPlanWrite(
  db: Db,
  teamId: string,
  chatId: string,
  write: { slackTs: string; state: unknown; textOnly: boolean },
): Promise<void> {
  await db
    .updateTable('plan_messages')
    .set({ slack_ts: write.slackTs, state: JSON.stringify(write.state), text_only: write.textOnly, written_at: sql`clock_timestamp()` })
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .execute();
}

/** Milliseconds until the message may be written again (0 when it may be now), on the database's clock. */
export async function planWriteWaitMs(db: Db, teamId: string, chatId: string, intervalMs: number): Promise<number> {
  const { rows } = await sql<{ wait_ms: number | null }>`
    select greatest(0, extract(epoch from (written_at + make_interval(secs => ${intervalMs / 1000}::float8) - clock_timestamp())) * 1000)::float8 as wait_ms
    from plan_messages where team_id = ${teamId} and chat_id = ${chatId}`.execute(db);
  return Number(rows[0]?.wait_ms ?? 0);
}

/**
 * Reserves the next write slot under `key` (shared by the workspace's plan messages) when it comes
 * within `maxWaitMs`: returns the wait before it. When the next slot is further away, nothing is
 * reserved and `retryInMs` says when to try again, so a job never sleeps long holding a worker.
 */
export async function tryReserveSlot(
  db: Db,
  teamId: string,
  key: string,
  intervalMs: number,
  maxWaitMs: number,
): Promise<{ waitMs: number } | { retryInMs: number }> {
  const { rows } = await sql<{ wait_ms: number }>`
    insert into channel_post_slots as s (team_id, channel_id, last_slot)
    values (${teamId}, ${key}, clock_timestamp())
    on conflict (team_id, channel_id) do update
      set last_slot = greatest(clock_timestamp(), s.last_slot + make_interval(secs => ${intervalMs / 1000}::float8))
      where greatest(clock_timestamp(), s.last_slot + make_interval(secs => ${intervalMs / 1000}::float8))
        <= clock_timestamp() + make_interval(secs => ${maxWaitMs / 1000}::float8)
    returning greatest(0, extract(epoch from (s.last_slot - clock_timestamp())) * 1000)::float8 as wait_ms`.execute(db);
  if (rows[0]) return { waitMs: Number(rows[0].wait_ms) };
  const next = await sql<{ retry_ms: number }>`
    select greatest(0, extract(epoch from (last_slot + make_interval(secs => ${intervalMs / 1000}::float8) - clock_timestamp())) * 1000)::float8 - ${maxWaitMs} as retry_ms
    from channel_post_slots where team_id = ${teamId} and channel_id = ${key}`.execute(db);
  return { retryInMs: Math.max(100, Math.ceil(Number(next.rows[0]?.retry_ms ?? intervalMs))) };
}
