// Chats: one per Slack thread, keyed by workspace, channel and thread ts; holds the agreed plan.
import type { Db } from './db.js';
import type { Chat, Trigger } from './tables.js';

/**
 * A trigger and the chat it belongs to, in one round trip (a turn's first read; the caller checks
 * that both are of one team). Undefined when the trigger does not exist.
 */
export async function getTriggerWithChat(db: Db, triggerId: string): Promise<{ trigger: Trigger; chat: Chat | undefined } | undefined> {
  const row = await db
    .selectFrom('triggers as t')
    .leftJoin('chats as c', 'c.id', 't.chat_id')
    .selectAll('t')
    .select([
      'c.id as chat_id_',
      'c.team_id as chat_team_id',
      'c.channel_id as chat_channel_id',
      'c.thread_ts as chat_thread_ts',
      'c.owner_user_id as chat_owner_user_id',
      'c.plan as chat_plan',
      'c.decision as chat_decision',
      'c.stopped_at as chat_stopped_at',
      'c.stopped_by as chat_stopped_by',
      'c.stop_trigger_id as chat_stop_trigger_id',
      'c.created_at as chat_created_at',
      'c.updated_at as chat_updated_at',
    ])
    .where('t.id', '=', triggerId)
    .executeTakeFirst();
  if (!row) return undefined;
  const {
    chat_id_, chat_team_id, chat_channel_id, chat_thread_ts, chat_owner_user_id, chat_plan, chat_decision,
    chat_stopped_at, chat_stopped_by, chat_stop_trigger_id, chat_created_at, chat_updated_at, ...trigger
  } = row;
  const chat: Chat | undefined =
    chat_id_ === null
      ? undefined
      : {
          id: chat_id_,
          team_id: chat_team_id!,
          channel_id: chat_channel_id!,
          thread_ts: chat_thread_ts!,
          owner_user_id: chat_owner_user_id!,
          plan: chat_plan,
          decision: chat_decision,
          stopped_at: chat_stopped_at,
          stopped_by: chat_stopped_by,
          stop_trigger_id: chat_stop_trigger_id,
          created_at: chat_created_at!,
          updated_at: chat_updated_at!,
        };
  return { trigger, chat };
}

/** A chat by its id, within its workspace. */
export async function getChat(db: Db, teamId: string, chatId: string): Promise<Chat | undefined> {
  return db.selectFrom('chats').selectAll().where('team_id', '=', teamId).where('id', '=', chatId).executeTakeFirst();
}

export async function findChatByThread(
  db: Db,
  teamId: string,
  channelId: string,
  threadTs: string,
): Promise<Chat | undefined> {
  return db
    .selectFrom('chats')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('channel_id', '=', channelId)
    .where('thread_ts', '=', threadTs)
    .executeTakeFirst();
}

export async function setChatPlan(db: Db, teamId: string, chatId: string, plan: unknown): Promise<void> {
  await db
    .updateTable('chats')
    .set({ plan: JSON.stringify(plan), updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', chatId)
    .execute();
}
