// The thread's agreed plan as a turn holds it: read from its chat, saved back to it.
import { setChatPlan } from '../store/chats.js';
import type { Db } from '../store/db.js';
import type { Chat } from '../store/tables.js';
import { parsePlan, type Plan } from './plan.js';

export function currentPlan(ctx: { chat: Chat }): Plan | undefined {
  return parsePlan(ctx.chat.plan);
}

/** Stores the plan on the chat and in the turn's copy of the chat, so later tool calls see it. */
export async function savePlan(ctx: { db: Db; chat: Chat }, plan: Plan): Promise<void> {
  await setChatPlan(ctx.db, ctx.chat.team_id, ctx.chat.id, plan);
  ctx.chat.plan = plan;
}
