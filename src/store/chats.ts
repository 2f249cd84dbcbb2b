// Chats: one per Slack thread, keyed by workspace, channel and thread ts; holds the agreed plan.
import type { Db } from './db.js';
import type { Chat } from './tables.js';

/** The chat a trigger belongs to (the caller checks the trigger's team). */
export async function getChatOfTrigger(db: Db, triggerId: string): Promise<Chat | undefined> {
  return db
    .selectFrom('chats')
    .selectAll()
    .where('id', '=', (eb) => eb.selectFrom('triggers').select('chat_id').where('id', '=', triggerId))
    .executeTakeFirst();
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
