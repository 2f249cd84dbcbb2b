// Triggers: every input (Slack event, button, platform event, sweep) stored durably and enqueued as a turn.
import { sql } from 'kysely';
import type { Db } from './db.js';
import type { Chat, Trigger, TriggerKind, TriggerStatus } from './tables.js';

export const RUN_TURN_TASK = 'run_turn';

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
  chat: Chat;
  triggerId: string;
  /** False when the dedupe key was seen before (a redelivery): nothing new was stored. */
  created: boolean;
}

/**
 * Stores a trigger and enqueues its turn in one transaction: the job engine's row is written with
 * the trigger, so an acknowledged input is never lost. Turns of one chat share a job queue and run
 * one at a time. Joins the caller's transaction when given one. Returns undefined when the target chat does not exist and may not be created.
 */
export async function enqueueTrigger(
  db: Db,
  target: ChatTarget,
  input: TriggerInput,
  options: { maxAttempts?: number } = {},
): Promise<EnqueueResult | undefined> {
  const inTransaction = async (trx: Db): Promise<EnqueueResult | undefined> => {
    let chat: Chat | undefined;
    if ('chatId' in target) {
      chat = await trx
        .selectFrom('chats')
        .selectAll()
        .where('team_id', '=', input.teamId)
        .where('id', '=', target.chatId)
        .executeTakeFirst();
    } else {
      if (target.create) {
        await trx
          .insertInto('chats')
          .values({
            team_id: input.teamId,
            channel_id: target.channelId,
            thread_ts: target.threadTs,
            owner_user_id: target.ownerUserId,
          })
          .onConflict((oc) => oc.constraint('chats_thread_key').doNothing())
          .execute();
      }
      chat = await trx
        .selectFrom('chats')
        .selectAll()
        .where('team_id', '=', input.teamId)
        .where('channel_id', '=', target.channelId)
        .where('thread_ts', '=', target.threadTs)
        .executeTakeFirst();
    }
    if (!chat) return undefined;

    const inserted = await trx
      .insertInto('triggers')
      .values({
        team_id: input.teamId,
        chat_id: chat.id,
        kind: input.kind,
        dedupe_key: input.dedupeKey,
        user_id: input.userId,
        payload: JSON.stringify(input.payload),
      })
      .onConflict((oc) => oc.constraint('triggers_dedupe').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) {
      const existing = await trx
        .selectFrom('triggers')
        .select('id')
        .where('team_id', '=', input.teamId)
        .where('dedupe_key', '=', input.dedupeKey)
        .executeTakeFirstOrThrow();
      return { chat, triggerId: existing.id, created: false };
    }
    await addTurnJob(trx, chat.id, inserted.id, options.maxAttempts ?? 25);
    return { chat, triggerId: inserted.id, created: true };
  };
  return db.isTransaction ? inTransaction(db) : db.transaction().execute(inTransaction);
}

/** Enqueues (or re-enqueues) the turn of a stored trigger; the job key makes this idempotent. */
export async function addTurnJob(db: Db, chatId: string, triggerId: string, maxAttempts = 25): Promise<void> {
  await sql`select graphile_worker.add_job(
      ${RUN_TURN_TASK},
      json_build_object('triggerId', ${triggerId}::text),
      queue_name => ${`chat:${chatId}`}::text,
      job_key => ${`trigger:${triggerId}`}::text,
      max_attempts => ${maxAttempts}::int
    )`.execute(db);
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
