// Feedback on a verdict: one vote per person per verdict message, tied to the turn that wrote it.
// A click is recorded, and its ephemeral answer queued, in one statement.
import { sql } from 'kysely';
import { BUTTON_FEEDBACK_TASK } from '../jobs/task-names.js';
import type { ButtonFeedback } from './button-choices.js';
import type { Db } from './db.js';

export type Vote = 'positive' | 'negative';

/** A vote as a click carries it (the button's value), or undefined for any other value. */
export function parseVote(value: unknown): Vote | undefined {
  return value === 'positive' || value === 'negative' ? value : undefined;
}

/** How a vote reads in Slack. */
export const VOTE_EMOJI: Record<Vote, string> = { positive: ':+1:', negative: ':-1:' };

export interface VerdictVote {
  teamId: string;
  channelId: string;
  /** The message holding the buttons, as Slack reports it. */
  messageTs: string;
  /** The thread Slack reports, used only to place the answer when the message is not a known verdict. */
  threadTs?: string;
  userId: string;
  vote: Vote;
}

export type VoteOutcome =
  | { outcome: 'recorded'; vote: Vote; previous: Vote | null; postId: string; chatId: string; turnId: string; ownerUserId: string }
  | { outcome: 'not_a_verdict' };

/** The tallies and the votes of one turn's verdict(s), for the Activity log. */
export interface VerdictFeedbackSummary {
  positive: number;
  negative: number;
  /** Who voted what, oldest vote first. */
  votes: Array<{ userId: string; vote: Vote }>;
}

/** How long a vote waits for the outbox to record the ts of a message Slack has just shown. */
const DELIVERY_WAIT_MS = 1500;

function thanksTexts(vote: Vote): { fresh: string; same: string; changed: string } {
  const other: Vote = vote === 'positive' ? 'negative' : 'positive';
  return {
    fresh: `Thanks: your ${VOTE_EMOJI[vote]} on this verdict is recorded. Click ${VOTE_EMOJI[other]} to change it.`,
    same: `Your ${VOTE_EMOJI[vote]} on this verdict was already recorded; nothing changed.`,
    changed: `Thanks: your vote on this verdict is now ${VOTE_EMOJI[vote]} (it was ${VOTE_EMOJI[other]}).`,
  };
}

interface RecordedRow {
  post_id: string;
  chat_id: string;
  turn_id: string;
  owner_user_id: string;
  previous: Vote | null;
}

/**
 * Records a person's vote on the verdict a message shows: the first click stores it, a later click
 * changes it (one row per person per verdict). The message must be a delivered post of a turn that
 * carries a comparison; anything else records nothing. In the same statement the ephemeral answer
 * (thanks, unchanged, changed) is queued as a button-feedback job, so a recorded vote is always
 * answered and an answer never claims a vote that was not stored.
 */
export async function recordVerdictVote(db: Db, input: VerdictVote): Promise<VoteOutcome> {
  const texts = thanksTexts(input.vote);
  const deadline = Date.now() + DELIVERY_WAIT_MS;
  for (;;) {
    const result = await sql<RecordedRow & { delivering: boolean }>`
      with target as (
        select p.id as post_id, p.chat_id, p.turn_id, c.owner_user_id, c.thread_ts
        from posts p join chats c on c.id = p.chat_id and c.team_id = p.team_id
        where p.team_id = ${input.teamId} and p.channel_id = ${input.channelId} and p.slack_ts = ${input.messageTs}
          and p.turn_id is not null
          and jsonb_path_exists(p.payload, '$.reply.parts[*] ? (@.kind == "comparison")')
        limit 1
      ),
      previous as (
        select f.vote from verdict_feedback f join target t on f.post_id = t.post_id
        where f.team_id = ${input.teamId} and f.user_id = ${input.userId}
      ),
      upserted as (
        insert into verdict_feedback (team_id, chat_id, turn_id, post_id, user_id, vote)
        select ${input.teamId}, chat_id, turn_id, post_id, ${input.userId}, ${input.vote} from target
        on conflict on constraint verdict_feedback_one_vote do update set vote = excluded.vote, updated_at = now()
        returning post_id, chat_id, turn_id
      ),
      answered as (
        select graphile_worker.add_job(${BUTTON_FEEDBACK_TASK}, json_build_object(
            'kind', 'ephemeral', 'teamId', ${input.teamId}::text, 'channel', ${input.channelId}::text,
            'user', ${input.userId}::text, 'threadTs', t.thread_ts,
            'text', case
              when (select vote from previous) is null then ${texts.fresh}::text
              when (select vote from previous) = ${input.vote} then ${texts.same}::text
              else ${texts.changed}::text end),
          max_attempts => 3)
        from upserted u cross join target t
      )
      select u.post_id::text, u.chat_id::text, u.turn_id::text, t.owner_user_id, (select vote from previous) as previous,
             (select count(*) from answered) > 0 as answered, false as delivering
      from upserted u cross join target t
      union all
      select null, null, null, null, null, false, exists (
        select 1 from posts where team_id = ${input.teamId} and channel_id = ${input.channelId} and status = 'pending' and attempts > 0
      )`.execute(db);
    const row = result.rows.find((r) => !r.delivering && r.post_id !== null);
    if (row) {
      return {
        outcome: 'recorded',
        vote: input.vote,
        previous: row.previous,
        postId: row.post_id,
        chatId: row.chat_id,
        turnId: row.turn_id,
        ownerUserId: row.owner_user_id,
      };
    }
    if (!result.rows.some((r) => r.delivering) || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const answer: ButtonFeedback = {
    kind: 'ephemeral',
    teamId: input.teamId,
    channel: input.channelId,
    user: input.userId,
    ...(input.threadTs ? { threadTs: input.threadTs } : {}),
    text: 'That message holds no verdict I can record feedback on. Nothing was recorded.',
  };
  await sql`select graphile_worker.add_job(${BUTTON_FEEDBACK_TASK}, ${JSON.stringify(answer)}::json, max_attempts => 3)`.execute(db);
  return { outcome: 'not_a_verdict' };
}

/** The votes on one verdict message, oldest first. */
export async function votesOnPost(db: Db, teamId: string, postId: string): Promise<Array<{ userId: string; vote: Vote }>> {
  const rows = await db
    .selectFrom('verdict_feedback')
    .select(['user_id', 'vote'])
    .where('team_id', '=', teamId)
    .where('post_id', '=', postId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ userId: r.user_id, vote: r.vote }));
}

/**
 * The feedback summary from the JSON the Activity query aggregates (`[{userId, vote}]`, or null
 * for a turn nobody voted on).
 */
export function toFeedbackSummary(value: unknown): VerdictFeedbackSummary | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const votes = value.flatMap((item): Array<{ userId: string; vote: Vote }> => {
    const v = item as { userId?: unknown; vote?: unknown } | null;
    const vote = parseVote(v?.vote);
    return vote && typeof v?.userId === 'string' ? [{ userId: v.userId, vote }] : [];
  });
  if (votes.length === 0) return null;
  return {
    positive: votes.filter((v) => v.vote === 'positive').length,
    negative: votes.filter((v) => v.vote === 'negative').length,
    votes,
  };
}
