// The conversation of a chat: every Anthropic content block, in order, never re-read from Slack.
import type { ReplyPart } from '../agent/reply.js';
import type { Db } from './db.js';
import type { StoredMessage } from './tables.js';

export async function listMessages(db: Db, teamId: string, chatId: string): Promise<StoredMessage[]> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .orderBy('id')
    .execute();
}

/** Appends a message of the turn (the person's, or tool results). */
export async function appendMessage(
  db: Db,
  message: {
    teamId: string;
    chatId: string;
    turnId: string | null;
    role: 'user' | 'assistant';
    content: unknown[];
    stopReason?: string | null;
    usage?: Record<string, number> | null;
    /** The reply parts a tool result contributed to the turn's post (never sent to the model). */
    parts?: ReplyPart[] | null;
  },
): Promise<StoredMessage> {
  return db
    .insertInto('messages')
    .values({
      team_id: message.teamId,
      chat_id: message.chatId,
      turn_id: message.turnId,
      role: message.role,
      content: JSON.stringify(message.content),
      stop_reason: message.stopReason ?? null,
      usage: message.usage ? JSON.stringify(message.usage) : null,
      attachments: message.parts && message.parts.length > 0 ? JSON.stringify(message.parts) : null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}
