// A thread's closing decision (keep a model): recorded once, on the chat, with who made it and when.
import { sql } from 'kysely';
import type { Db } from './db.js';

export interface ChatDecision {
  kind: 'keep_model';
  modelId: string;
  label: string;
  by: string;
  at: string;
}

/** Records the decision unless one is recorded already; returns the one that stands. */
export async function recordDecision(db: Db, teamId: string, chatId: string, decision: ChatDecision): Promise<ChatDecision> {
  const { rows } = await sql<{ decision: ChatDecision }>`
    update chats set decision = coalesce(decision, ${JSON.stringify(decision)}::jsonb), updated_at = now()
    where team_id = ${teamId} and id = ${chatId}
    returning decision`.execute(db);
  return rows[0]?.decision ?? decision;
}
