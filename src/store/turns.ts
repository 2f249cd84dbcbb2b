// Turns: one run of the agent for one trigger, with its token usage and price.
import { sql } from 'kysely';
import type { TokenUsage } from '../agent/pricing.js';
import type { Db } from './db.js';
import type { Turn } from './tables.js';

/** Returns the turn of a trigger, creating it on first run (a retried job finds the same turn). */
export async function getOrCreateTurn(
  db: Db,
  input: { teamId: string; chatId: string; triggerId: string; model: string },
): Promise<{ turn: Turn; created: boolean }> {
  const inserted = await db
    .insertInto('turns')
    .values({ team_id: input.teamId, chat_id: input.chatId, trigger_id: input.triggerId, model: input.model, cost_usd: 0 })
    .onConflict((oc) => oc.column('trigger_id').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { turn: inserted, created: true };
  const turn = await db
    .selectFrom('turns')
    .selectAll()
    .where('team_id', '=', input.teamId)
    .where('trigger_id', '=', input.triggerId)
    .executeTakeFirstOrThrow();
  return { turn, created: false };
}

/** Adds one model call's usage and price to the turn, summed in SQL as numeric. */
export async function addTurnUsage(db: Db, teamId: string, turnId: string, usage: TokenUsage, costUsd: string): Promise<void> {
  await db
    .updateTable('turns')
    .set((eb) => ({
      model_calls: eb('model_calls', '+', 1),
      input_tokens: eb('input_tokens', '+', usage.inputTokens),
      output_tokens: eb('output_tokens', '+', usage.outputTokens),
      cache_read_tokens: eb('cache_read_tokens', '+', usage.cacheReadTokens),
      cache_write_tokens: eb('cache_write_tokens', '+', usage.cacheWriteTokens),
      cost_usd: sql<string>`cost_usd + ${costUsd}::numeric`,
    }))
    .where('team_id', '=', teamId)
    .where('id', '=', turnId)
    .execute();
}

export async function finishTurn(
  db: Db,
  teamId: string,
  turnId: string,
  status: 'completed' | 'failed',
  error: string | null = null,
): Promise<Turn> {
  return db
    .updateTable('turns')
    .set({ status, error, finished_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', turnId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function getTurn(db: Db, teamId: string, turnId: string): Promise<Turn | undefined> {
  return db.selectFrom('turns').selectAll().where('team_id', '=', teamId).where('id', '=', turnId).executeTakeFirst();
}
