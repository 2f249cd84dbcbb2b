// Triggers: every input (Slack event, button, platform event, sweep) stored durably and enqueued as a turn.
import { sql } from 'kysely';
import { RUN_TURN_TASK } from '../jobs/task-names.js';
import type { Db } from './db.js';
import type { TriggerKind, TriggerStatus } from './tables.js';
import { triggerFiles, type SharedFile } from './trigger-files.js';

export interface TriggerInput {
  teamId: string;
  kind: TriggerKind;
  /** Collapses redeliveries: a Slack message ts, a webhook id, a button action ts. */
  dedupeKey: string;
  userId: string | null;
  payload: Record<string, unknown>;
}

export type ChatTarget =
  | { create: true; channelId: string; threadTs: string; ownerUserId: string }
  | { create: false; channelId: string; threadTs: string }
  | { chatId: string };

export interface EnqueueResult {
  chatId: string;
  triggerId: string;
  /** False when the dedupe key was seen before (a redelivery): nothing new was stored. */
  created: boolean;
}

/** The job queue of a chat's turns: graphile-worker runs the jobs of one named queue one at a time. */
export function turnQueueName(chatId: string): string {
  return `chat:${chatId}`;
}

/**
 * Enqueues the turn job of each row of a CTE named `inserted` (columns id, chat_id) through
 * graphile-worker's public `add_job`: in the chat's queue ({@link turnQueueName}), keyed by its
 * trigger (`trigger:<id>`), so the job commits with the trigger and a re-enqueue collapses.
 */
export function addJobFromInserted(maxAttempts: number) {
  return sql`select graphile_worker.add_job(${RUN_TURN_TASK}::text, json_build_object('triggerId', inserted.id::text),
    queue_name => 'chat:' || inserted.chat_id::text, job_key => 'trigger:' || inserted.id::text, max_attempts => ${maxAttempts}::int)
    from inserted`;
}

/** SQL selecting the target chat's id, creating the chat when allowed. */
function chatSql(target: ChatTarget, teamId: string) {
  if ('chatId' in target) {
    return sql`select id from chats where team_id = ${teamId} and id = ${target.chatId}`;
  }
  if (!target.create) {
    return sql`select id from chats where team_id = ${teamId} and channel_id = ${target.channelId} and thread_ts = ${target.threadTs}`;
  }
  // "do update" (a no-op write) makes the statement return the id of an existing chat too.
  return sql`insert into chats (team_id, channel_id, thread_ts, owner_user_id)
    values (${teamId}, ${target.channelId}, ${target.threadTs}, ${target.ownerUserId})
    on conflict on constraint chats_thread_key do update set updated_at = chats.updated_at
    returning id`;
}

/**
 * Stores a trigger and enqueues its turn atomically, in one statement (one round trip): the job
 * engine's row is written with the trigger, so an acknowledged input is never lost. Turns of one
 * chat share a job queue and run one at a time. Returns undefined when the target chat does not
 * exist and may not be created.
 */
export async function enqueueTrigger(
  db: Db,
  target: ChatTarget,
  input: TriggerInput,
  options: { maxAttempts?: number } = {},
): Promise<EnqueueResult | undefined> {
  const result = await sql<{ chat_id: string | null; trigger_id: string | null; existing_id: string | null }>`
    with chat as (${chatSql(target, input.teamId)}),
    inserted as (
      insert into triggers (team_id, chat_id, kind, dedupe_key, user_id, payload)
      select ${input.teamId}, chat.id, ${input.kind}, ${input.dedupeKey}, ${input.userId}, ${JSON.stringify(input.payload)}::jsonb
      from chat
      on conflict on constraint triggers_dedupe do nothing
      returning id, chat_id
    ),
    job as (${addJobFromInserted(options.maxAttempts ?? 25)})
    select (select id from chat limit 1) as chat_id,
           (select id from inserted) as trigger_id,
           (select count(*) from job) as jobs,
           (select id from triggers where team_id = ${input.teamId} and dedupe_key = ${input.dedupeKey}) as existing_id
  `.execute(db);
  const row = result.rows[0];
  if (!row?.chat_id) return undefined;
  if (row.trigger_id) return { chatId: row.chat_id, triggerId: row.trigger_id, created: true };
  // A concurrent delivery of the same input may have committed after this statement's snapshot.
  const existing =
    row.existing_id ??
    (
      await db
        .selectFrom('triggers')
        .select('id')
        .where('team_id', '=', input.teamId)
        .where('dedupe_key', '=', input.dedupeKey)
        .executeTakeFirstOrThrow()
    ).id;
  return { chatId: row.chat_id, triggerId: existing, created: false };
}

/** A Slack input (mention or thread reply) for {@link enqueueSlackTriggers}. */
export interface SlackTriggerInput {
  target: Exclude<ChatTarget, { chatId: string }>;
  input: TriggerInput;
}

/**
 * Stores Slack triggers and enqueues their turns in one statement for the whole batch (group
 * commit: one round trip and one durable commit for many events), with {@link enqueueTrigger}'s
 * meaning for each item: results in input order, undefined where the chat does not exist and may not
 * be created (a reply finds a chat that existed before, or that a mention of the batch opens); of
 * several items with one dedupe key, the first is `created` and the others not.
 */
export async function enqueueSlackTriggers(
  db: Db,
  items: readonly SlackTriggerInput[],
  options: { maxAttempts?: number } = {},
): Promise<Array<EnqueueResult | undefined>> {
  if (items.length === 0) return [];
  const column = <T>(pick: (item: SlackTriggerInput) => T) => items.map(pick);
  const result = await sql<{ ord: string; chat_id: string | null; trigger_id: string | null; existing_id: string | null }>`
    with input as (
      select * from unnest(
        ${column((i) => i.input.teamId)}::text[],
        ${column((i) => i.target.channelId)}::text[],
        ${column((i) => i.target.threadTs)}::text[],
        ${column((i) => (i.target.create ? i.target.ownerUserId : null))}::text[],
        ${column((i) => i.target.create)}::boolean[],
        ${column((i) => i.input.kind)}::text[],
        ${column((i) => i.input.dedupeKey)}::text[],
        ${column((i) => i.input.userId)}::text[],
        ${column((i) => JSON.stringify(i.input.payload))}::jsonb[]
      ) with ordinality as i(team_id, channel_id, thread_ts, owner_user_id, can_create, kind, dedupe_key, user_id, payload, ord)
    ),
    created as (
      -- One row per thread (a statement may not update a row twice), in key order so that two
      -- batches lock shared threads in the same order; "do update" returns an existing chat's id too.
      insert into chats (team_id, channel_id, thread_ts, owner_user_id)
      select distinct on (team_id, channel_id, thread_ts) team_id, channel_id, thread_ts, owner_user_id
      from input where can_create
      order by team_id, channel_id, thread_ts, ord
      on conflict on constraint chats_thread_key do update set updated_at = chats.updated_at
      returning id, team_id, channel_id, thread_ts
    ),
    target as (
      select i.*, coalesce(c.id, e.id) as chat_id
      from input i
      left join created c on c.team_id = i.team_id and c.channel_id = i.channel_id and c.thread_ts = i.thread_ts
      left join chats e on e.team_id = i.team_id and e.channel_id = i.channel_id and e.thread_ts = i.thread_ts
    ),
    inserted as (
      insert into triggers (team_id, chat_id, kind, dedupe_key, user_id, payload)
      select distinct on (team_id, dedupe_key) team_id, chat_id, kind, dedupe_key, user_id, payload
      from target where chat_id is not null
      order by team_id, dedupe_key, ord
      on conflict on constraint triggers_dedupe do nothing
      returning id, chat_id, team_id, dedupe_key
    ),
    job as (${addJobFromInserted(options.maxAttempts ?? 25)})
    select t.ord::text as ord, t.chat_id::text as chat_id, ins.id::text as trigger_id, ex.id::text as existing_id,
           -- Selected so that the job part runs (an unread CTE is skipped).
           (select count(*) from job) as jobs
    from target t
    left join inserted ins on ins.team_id = t.team_id and ins.dedupe_key = t.dedupe_key
    left join triggers ex on ex.team_id = t.team_id and ex.dedupe_key = t.dedupe_key
    order by t.ord
  `.execute(db);
  if (result.rows.length !== items.length) throw new Error(`ingest returned ${result.rows.length} rows for ${items.length} Slack events`);
  // Of the items that share a new trigger (one dedupe key twice in the batch), the first created it.
  const claimed = new Set<string>();
  return Promise.all(
    result.rows.map(async (row, index): Promise<EnqueueResult | undefined> => {
      if (!row.chat_id) return undefined;
      if (row.trigger_id) {
        const created = !claimed.has(row.trigger_id);
        claimed.add(row.trigger_id);
        return { chatId: row.chat_id, triggerId: row.trigger_id, created };
      }
      const input = items[index]!.input;
      // A concurrent delivery of the same input may have committed after this statement's snapshot.
      const existing =
        row.existing_id ??
        (await db.selectFrom('triggers').select('id').where('team_id', '=', input.teamId).where('dedupe_key', '=', input.dedupeKey).executeTakeFirstOrThrow()).id;
      return { chatId: row.chat_id, triggerId: existing, created: false };
    }),
  );
}

/** Enqueues (or re-enqueues) the turn of a stored trigger; the job key makes this idempotent. */
export async function addTurnJob(db: Db, chatId: string, triggerId: string, maxAttempts = 25): Promise<void> {
  await sql`select graphile_worker.add_job(${RUN_TURN_TASK}::text, json_build_object('triggerId', ${triggerId}::text),
    queue_name => ${turnQueueName(chatId)}::text, job_key => ${`trigger:${triggerId}`}::text, max_attempts => ${maxAttempts}::int)`.execute(db);
}

export async function setTriggerStatus(
  db: Db,
  teamId: string,
  triggerId: string,
  status: TriggerStatus,
  error: string | null = null,
): Promise<void> {
  await db
    .updateTable('triggers')
    .set({
      status,
      error,
      finished_at: status === 'done' || status === 'failed' ? new Date() : null,
    })
    .where('team_id', '=', teamId)
    .where('id', '=', triggerId)
    .execute();
}

export async function countTriggers(db: Db, teamId: string): Promise<number> {
  const row = await db
    .selectFrom('triggers')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('team_id', '=', teamId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The files shared with this thread's messages (mentions and replies), newest first. */
export async function listThreadFiles(db: Db, teamId: string, chatId: string): Promise<SharedFile[]> {
  const triggers = await db
    .selectFrom('triggers')
    .select(['payload'])
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .where('kind', 'in', ['mention', 'reply'])
    .orderBy('id', 'desc')
    .execute();
  return triggers.flatMap((t) => triggerFiles(t));
}
