// Slack posts as an outbox: written with the turn's other writes, delivered exactly once afterwards.
import { sql } from 'kysely';
import type { Reply } from '../agent/reply.js';
import { offeredChoices } from '../slack/offered-choices.js';
import { storeOfferedChoices } from './button-choices.js';
import type { Db } from './db.js';
import type { Post } from './tables.js';

/** A post as the outbox stores it: the agent's typed reply, rendered by src/slack/poster.ts at delivery. */
export interface PostPayload {
  reply: Reply;
}

/**
 * A post stored by a version before typed replies: the rendered message itself. It is delivered and
 * updated as it is; its grants were stored with it then.
 */
export interface LegacyPostPayload {
  text: string;
  blocks?: unknown[];
}

export type StoredPostPayload = PostPayload | LegacyPostPayload;

export function isLegacyPayload(payload: StoredPostPayload): payload is LegacyPostPayload {
  return !('reply' in payload);
}

/**
 * Stores a post unless one with the same key exists (a retried turn re-creates nothing), with the
 * grants of the choices it offers, in one transaction (the caller's, when it has one).
 */
export async function createPost(
  db: Db,
  post: { teamId: string; chatId: string; turnId: string | null; postKey: string; channelId: string; threadTs: string; reply: Reply },
): Promise<Post> {
  const choices = offeredChoices(post.reply);
  if (!db.isTransaction && choices.length > 0) return db.transaction().execute((trx) => createPost(trx, post));
  const inserted = await db
    .insertInto('posts')
    .values({
      team_id: post.teamId,
      chat_id: post.chatId,
      turn_id: post.turnId,
      post_key: post.postKey,
      channel_id: post.channelId,
      thread_ts: post.threadTs,
      payload: JSON.stringify({ reply: post.reply } satisfies PostPayload),
    })
    .onConflict((oc) => oc.constraint('posts_key').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) {
    await storeOfferedChoices(db, { id: inserted.id, teamId: post.teamId, chatId: post.chatId, choices });
    return inserted;
  }
  // A retried turn: the post was created by the earlier attempt.
  return db
    .selectFrom('posts')
    .selectAll()
    .where('team_id', '=', post.teamId)
    .where('post_key', '=', post.postKey)
    .executeTakeFirstOrThrow();
}

export async function pendingPosts(db: Db, teamId: string, chatId: string): Promise<Post[]> {
  return db
    .selectFrom('posts')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .where('status', '=', 'pending')
    .orderBy('id')
    .execute();
}

/**
 * Records that a delivery is being attempted and reserves the channel's next posting slot (see
 * {@link reservePostSlot}), in one statement. A durable commit before Slack is called: it is what
 * makes a later attempt look for the post first. Returns the attempt number (1 for the first) and
 * how long to wait for the slot.
 */
export async function startPostAttempt(
  db: Db,
  post: { teamId: string; postId: string; channelId: string },
  intervalMs: number,
): Promise<{ attempt: number; slotWaitMs: number }> {
  const { rows } = await sql<{ attempts: number; wait_ms: number }>`
    with attempt as (
      update posts set attempts = attempts + 1 where team_id = ${post.teamId} and id = ${post.postId} returning attempts
    ), slot as (${postSlotReservation(post.teamId, post.channelId, intervalMs)})
    select attempt.attempts, slot.wait_ms from attempt cross join slot`.execute(db);
  const row = rows[0];
  if (!row) throw new Error(`post ${post.postId} of team ${post.teamId} not found`);
  return { attempt: row.attempts, slotWaitMs: row.wait_ms };
}

/**
 * Records a post as delivered. Should this write be lost, the post is pending again with its attempt
 * recorded, and the next delivery finds it in the thread by its metadata instead of posting it twice.
 */
export async function markPostDelivered(db: Db, teamId: string, postId: string, slackTs: string, permalink: string | null): Promise<void> {
  await db
    .updateTable('posts')
    .set({ status: 'posted', slack_ts: slackTs, permalink, posted_at: new Date(), error: null })
    .where('team_id', '=', teamId)
    .where('id', '=', postId)
    .execute();
}

/** A link for the Activity log. */
export async function setPostPermalink(db: Db, teamId: string, postId: string, permalink: string): Promise<void> {
  await db.updateTable('posts').set({ permalink }).where('team_id', '=', teamId).where('id', '=', postId).execute();
}

export async function markPostFailed(db: Db, teamId: string, postId: string, error: string): Promise<void> {
  await db
    .updateTable('posts')
    .set({ status: 'failed', error })
    .where('team_id', '=', teamId)
    .where('id', '=', postId)
    .execute();
}

export async function countPosts(db: Db, teamId: string, chatId: string): Promise<number> {
  const row = await db
    .selectFrom('posts')
    .select(sql<string>`count(*)`.as('n'))
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Reserves the next post slot of a channel, at least `intervalMs` after the previous one, for every
 * process sharing this database (replicas), and returns how long to wait for it. One statement: the
 * row lock orders concurrent reservations, and the database clock is the only clock involved.
 */
export async function reservePostSlot(db: Db, teamId: string, channelId: string, intervalMs: number): Promise<number> {
  const { rows } = await sql<{ wait_ms: number }>`${postSlotReservation(teamId, channelId, intervalMs)}`.execute(db);
  return rows[0]!.wait_ms;
}

/** The statement that reserves a channel's next post slot, returning `wait_ms` (see {@link reservePostSlot}). */
function postSlotReservation(teamId: string, channelId: string, intervalMs: number) {
  return sql`
    insert into channel_post_slots as s (team_id, channel_id, last_slot)
    values (${teamId}, ${channelId}, clock_timestamp())
    on conflict (team_id, channel_id) do update
      set last_slot = greatest(clock_timestamp(), s.last_slot + make_interval(secs => ${intervalMs / 1000}::float8))
    returning greatest(0, extract(epoch from (s.last_slot - clock_timestamp())) * 1000)::float8 as wait_ms`;
}

export async function getPost(db: Db, teamId: string, postId: string): Promise<Post | undefined> {
  return db.selectFrom('posts').selectAll().where('team_id', '=', teamId).where('id', '=', postId).executeTakeFirst();
}
