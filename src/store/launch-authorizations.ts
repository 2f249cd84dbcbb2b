// The spend guard's stored decisions: each launch it allowed, keyed by the tool call, written before the platform is called.
import type { Db } from './db.js';

/** The tool call a launch decision belongs to; stable across a crash-and-resume of its turn. */
export interface ToolCallKey {
  teamId: string;
  turnId: string;
  toolUseId: string;
}

export interface StoredAuthorization {
  idempotencyKey: string;
  planStep: string | null;
}

/** The launch this tool call was allowed earlier, if any. */
export async function findAuthorization(db: Db, call: ToolCallKey): Promise<StoredAuthorization | undefined> {
  const row = await db
    .selectFrom('launch_authorizations')
    .select(['idempotency_key', 'plan_step'])
    .where('team_id', '=', call.teamId)
    .where('turn_id', '=', call.turnId)
    .where('tool_use_id', '=', call.toolUseId)
    .executeTakeFirst();
  return row ? { idempotencyKey: row.idempotency_key, planStep: row.plan_step } : undefined;
}

/**
 * Marks the launch of a tool call recorded (its resource is written, in the same transaction): from
 * then on the resource, not the decision, counts against the caps.
 */
export async function markAuthorizationRecorded(db: Db, call: ToolCallKey): Promise<void> {
  await db
    .updateTable('launch_authorizations')
    .set({ recorded_at: new Date() })
    .where('team_id', '=', call.teamId)
    .where('turn_id', '=', call.turnId)
    .where('tool_use_id', '=', call.toolUseId)
    .where('recorded_at', 'is', null)
    .execute();
}

/**
 * Records an allowed launch; the first record of a tool call stands. `credits` count against the
 * spender's caps until the launch itself is recorded (see `spendingInPeriod`).
 */
export async function rememberAuthorization(
  db: Db,
  call: ToolCallKey,
  decision: StoredAuthorization & { credits: number; spenderUserId: string; chatId: string },
): Promise<void> {
  await db
    .insertInto('launch_authorizations')
    .values({
      team_id: call.teamId,
      turn_id: call.turnId,
      tool_use_id: call.toolUseId,
      idempotency_key: decision.idempotencyKey,
      plan_step: decision.planStep,
      credits: Math.max(0, decision.credits),
      spender_user_id: decision.spenderUserId,
      chat_id: decision.chatId,
    })
    .onConflict((oc) => oc.columns(['turn_id', 'tool_use_id']).doNothing())
    .execute();
}
