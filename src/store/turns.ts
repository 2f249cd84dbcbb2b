// Turns: one run of the agent for one trigger, with its token usage and price.
import { sql } from 'kysely';
import type { TokenUsage } from '../agent/pricing.js';
import type { Db } from './db.js';
import type { StoredMessage, Turn } from './tables.js';

/**
 * Marks the trigger running and returns its turn, creating it on first run (a retried job finds the
 * same turn), in one statement.
 */
export async function startTurn(
  db: Db,
  input: { teamId: string; chatId: string; triggerId: string; model: string },
): Promise<{ turn: Turn; created: boolean }> {
  const query = sql<Turn & { created: boolean }>`
    with running as (
      update triggers set status = 'running', error = null, finished_at = null
      where team_id = ${input.teamId} and id = ${input.triggerId}
      returning id
    ),
    inserted as (
      insert into turns (team_id, chat_id, trigger_id, model, cost_usd)
      select ${input.teamId}, ${input.chatId}, running.id, ${input.model}, 0 from running
      on conflict (trigger_id) do nothing
      returning *
    )
    select inserted.*, true as created from inserted
    union all
    select turns.*, false as created from turns
    where team_id = ${input.teamId} and trigger_id = ${input.triggerId} and not exists (select 1 from inserted)
  `;
  const result = await query.execute(db);
  const row = result.rows[0];
  if (!row) throw new Error(`turn of trigger ${input.triggerId} could not be created or found`);
  const { created, ...turn } = row;
  return { turn: turn as Turn, created };
}

/** Records one model call in one statement: its usage and price added to the turn, its message appended. */
export async function recordModelCall(
  db: Db,
  input: { teamId: string; chatId: string; turnId: string; usage: TokenUsage; costUsd: string; content: unknown[]; stopReason: string | null },
): Promise<StoredMessage> {
  const { usage } = input;
  const result = await sql<StoredMessage>`
    with counted as (
      update turns set
        model_calls = model_calls + 1,
        input_tokens = input_tokens + ${usage.inputTokens}::int,
        output_tokens = output_tokens + ${usage.outputTokens}::int,
        cache_read_tokens = cache_read_tokens + ${usage.cacheReadTokens}::int,
        cache_write_tokens = cache_write_tokens + ${usage.cacheWriteTokens}::int,
        cost_usd = cost_usd + ${input.costUsd}::numeric
      where team_id = ${input.teamId} and id = ${input.turnId}
      returning id
    )
    insert into messages (team_id, chat_id, turn_id, role, content, stop_reason, usage)
    select ${input.teamId}, ${input.chatId}, counted.id, 'assistant', ${JSON.stringify(input.content)}::jsonb, ${input.stopReason},
           ${JSON.stringify(usage)}::jsonb
    from counted
    returning *
  `.execute(db);
  const row = result.rows[0];
  if (!row) throw new Error(`turn ${input.turnId} not found while recording a model call`);
  return row;
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

/** The agent's cost of each turn of a chat, oldest first, with their total. */
export async function chatTurnCosts(db: Db, teamId: string, chatId: string): Promise<{ totalUsd: number; turnsUsd: number[] }> {
  const turns = await db
    .selectFrom('turns')
    .select(['cost_usd', sql<string>`sum(cost_usd) over ()`.as('total')])
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .orderBy('id')
    .execute();
  return { totalUsd: Number(turns[0]?.total ?? 0), turnsUsd: turns.map((t) => Number(t.cost_usd)) };
}
