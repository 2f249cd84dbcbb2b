// Triggers: every input (Slack event, button, platform event, sweep) stored durably and enqueued as a turn.
import { sql } from 'kysely';
import { RUN_TURN_TASK } from '../jobs/task-names.js';
import type { Db } from './db.js';
import type { Trigger, TriggerKind, TriggerStatus } from './tables.js';
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

/** Every batch visits its threads in this order, so two batches that share chats lock them in the same order. */
function threadOrder(a: SlackTriggerInput, b: SlackTriggerInput): number {
  const key = (i: SlackTriggerInput) => [i.input.teamId, i.target.channelId, i.target.threadTs];
  const [x, y] = [key(a), key(b)];
  for (let k = 0; k < x.length; k += 1) if (x[k] !== y[k]) return x[k]! < y[k]! ? -1 : 1;
  return 0;
}

/**
 * Stores Slack triggers and enqueues their turns in one transaction for the whole batch (group
 * commit: one durable commit for many events), with {@link enqueueTrigger}'s meaning for each item:
 * results in input order, undefined where the chat does not exist and may not be created (a reply
 * finds a chat that existed before, or that an earlier mention of the batch opened); of several
 * items with one dedupe key, the first is `created` and the others not.
 */
export async function enqueueSlackTriggers(
  db: Db,
  items: readonly SlackTriggerInput[],
  options: { maxAttempts?: number } = {},
): Promise<Array<EnqueueResult | undefined>> {
  if (items.length === 0) return [];
  // A stable sort: the items of one thread keep their order (a mention before its replies).
  const order = items.map((item, index) => ({ item, index })).sort((a, b) => threadOrder(a.item, b.item) || a.index - b.index);
  return db.transaction().execute(async (trx) => {
    const results = new Array<EnqueueResult | undefined>(items.length);
    for (const { item, index } of order) results[index] = await enqueueTrigger(trx, item.target, item.input, options);
    return results;
  });
}

/** Enqueues (or re-enqueues) the turn of a stored trigger; the job key makes this idempotent. */
export async function addTurnJob(db: Db, chatId: string, triggerId: string, maxAttempts = 25): Promise<void> {
  await sql`select graphile_worker.add_job(${RUN_TURN_TASK}::text, json_build_object('triggerId', ${triggerId}::text),
    queue_name => ${turnQueueName(chatId)}::text, job_key => ${`trigger:${triggerId}`}::text, max_attempts => ${maxAttempts}::int)`.execute(db);
}

export async function getTrigger(db: Db, triggerId: string): Promise<Trigger | undefined> {
  return db.selectFrom('triggers').selectAll().where('id', '=', triggerId).executeTakeFirst();
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
