// The spend guard: gathers the facts of a launch, lets the pure spend policy decide, and stores what it allowed.
import { grantOfTrigger } from '../store/button-choices.js';
import { findAuthorization, rememberAuthorization } from '../store/launch-authorizations.js';
import { chatSpentCredits, lockWorkspaceSpending, spendingInPeriod } from '../store/spending.js';
import { parsePlan, type PlanStepKind } from './plan.js';
import { decideLaunch, type GuardDecision, type LaunchFacts } from './spend-policy.js';
import type { ToolContext } from './tools/tool.js';

import type { ButtonGrant, LaunchIntent, NextAction } from './reply.js';

export type { ButtonGrant, GuardDecision, LaunchIntent, NextAction };

export function mayApprove(ctx: Pick<ToolContext, 'chat' | 'config'>, userId: string | null): boolean {
  return userId !== null && (userId === ctx.chat.owner_user_id || ctx.config.spending.adminUserIds.includes(userId));
}

/**
 * The grant of the button this trigger's click claimed, as stored with the message the bot posted;
 * the value the click carried is never read. Undefined for any other trigger.
 */
export async function storedGrant(ctx: Pick<ToolContext, 'db' | 'trigger'>): Promise<ButtonGrant | undefined> {
  return grantOfTrigger(ctx.db, ctx.trigger);
}

/**
 * Decides a launch (see {@link decideLaunch} for the rules) and stores the decision when allowed,
 * before the platform is called: a crash after the call still finds it.
 */
export async function authorizeLaunch(
  ctx: ToolContext,
  intent: LaunchIntent,
  price: { credits: number; availableCredits: number },
  options: { toolUseId: string; datasetRunId?: string },
): Promise<GuardDecision> {
  const call = ctx.toolUseId && ctx.turn ? { teamId: ctx.chat.team_id, turnId: ctx.turn.id, toolUseId: ctx.toolUseId } : undefined;
  return ctx.db.transaction().execute(async (trx): Promise<GuardDecision> => {
    // The launch this very tool call was allowed before its turn was interrupted. The platform may
    // already have it (the answer was lost with the process) and it may already weigh on the balance
    // and the budget, so judging it again could refuse a launch that exists; it is repeated with the
    // same idempotency key instead, which the platform answers with the launch it has. Read before
    // the lock, in the same transaction: a repeat never waits behind the workspace's other launches.
    const earlier = call ? await findAuthorization(trx, call) : undefined;
    if (earlier) return { allowed: true, planStep: earlier.planStep as PlanStepKind | null, idempotencyKey: earlier.idempotencyKey };
    // One workspace's decisions are serialized across replicas, so two launches cannot both fit
    // under a cap that has room for one: the allowed one is written before the lock is released.
    const paid = price.credits > 0;
    if (paid) await lockWorkspaceSpending(trx, ctx.chat.team_id);
    const { chat, trigger, config } = ctx;
    const [grant, chatSpent, period] = await Promise.all([
      ctx.authority === 'button' ? grantOfTrigger(trx, trigger) : undefined,
      paid ? chatSpentCredits(trx, chat.team_id, chat.id) : 0,
      paid ? spendingInPeriod(trx, chat.team_id, chat.owner_user_id, config.spending.capPeriodDays) : { person: 0, workspace: 0 },
    ]);
    const facts: LaunchFacts = {
      intent,
      price,
      authority: ctx.authority,
      chatId: chat.id,
      triggerId: trigger.id,
      toolUseId: options.toolUseId,
      ...(options.datasetRunId !== undefined ? { datasetRunId: options.datasetRunId } : {}),
      plan: parsePlan(chat.plan),
      // Slack's Stop button closes the plan as a decision does.
      closedByDecision: Boolean(chat.decision) || Boolean(chat.stopped_at),
      ownerUserId: chat.owner_user_id,
      actorMayApprove: mayApprove(ctx, trigger.user_id),
      grant,
      limits: config.spending,
      spent: { chat: chatSpent, period },
    };
    const decision = decideLaunch(facts);
    if (decision.allowed && call) {
      await rememberAuthorization(trx, call, {
        idempotencyKey: decision.idempotencyKey,
        planStep: decision.planStep,
        credits: price.credits,
        spenderUserId: chat.owner_user_id,
        chatId: chat.id,
      });
    }
    return decision;
  });
}
