// The spend guard: code, not prompt, decides whether a launch may happen in this turn.
import { sql } from 'kysely';
import { grantOfTrigger } from '../store/button-choices.js';
import type { Db } from '../store/db.js';
import { lockWorkspaceSpending, spendingInPeriod, type SpendingFigures } from '../store/spending.js';
import { baselineRunId, findStep, nextStep, parsePlan, type Plan, type PlanStepKind } from './plan.js';
import type { ToolContext } from './tools/tool.js';

import type { ButtonGrant, LaunchIntent, NextAction } from './reply.js';

export type { ButtonGrant, LaunchIntent, NextAction };

export type GuardDecision =
  | { allowed: true; planStep: PlanStepKind | null; idempotencyKey: string }
  | { allowed: false; reason: string; approval?: { intent: LaunchIntent; credits: number } };

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

export interface SpendingCaps {
  personCap: number;
  workspaceCap: number;
  capPeriodDays: number;
}

/** Which cap, if any, a launch of `credits` would pass, given what was spent in the period. */
export function capExceeded(
  spent: SpendingFigures,
  credits: number,
  caps: SpendingCaps,
): { scope: 'person' | 'workspace'; spent: number; cap: number } | undefined {
  const over = (already: number, cap: number) => credits > 0 && already + credits > cap + 1e-9;
  if (over(spent.person, caps.personCap)) return { scope: 'person', spent: spent.person, cap: caps.personCap };
  if (over(spent.workspace, caps.workspaceCap)) return { scope: 'workspace', spent: spent.workspace, cap: caps.workspaceCap };
  return undefined;
}

function sameIntent(a: LaunchIntent, b: LaunchIntent): boolean {
  return JSON.stringify(normalizeIntent(a)) === JSON.stringify(normalizeIntent(b));
}

function normalizeIntent(intent: LaunchIntent): LaunchIntent {
  switch (intent.tool) {
    case 'benchmark-launch':
      return { tool: intent.tool, benchmarkId: intent.benchmarkId, modelId: intent.modelId };
    case 'dataset-build':
      return { tool: intent.tool, runId: intent.runId, augmentation: intent.augmentation, heldOutFraction: intent.heldOutFraction };
    case 'training-launch':
      return { tool: intent.tool, datasetId: intent.datasetId, baseModelId: intent.baseModelId };
  }
}

/** Which plan step, if any, this launch is. */
export function matchPlanStep(plan: Plan, intent: LaunchIntent): PlanStepKind | undefined {
  switch (intent.tool) {
    case 'benchmark-launch': {
      if (intent.benchmarkId !== plan.benchmarkId) return undefined;
      if (intent.modelId === plan.baseModelId && findStep(plan, 'baseline_run')) return 'baseline_run';
      if (plan.trainedModelId && intent.modelId === plan.trainedModelId && findStep(plan, 'trained_run')) return 'trained_run';
      return undefined;
    }
    case 'dataset-build':
      return findStep(plan, 'train') && intent.runId === baselineRunId(plan) ? 'train' : undefined;
    case 'training-launch': {
      const train = findStep(plan, 'train');
      return train && train.datasetId === intent.datasetId && intent.baseModelId === plan.baseModelId ? 'train' : undefined;
    }
  }
}

/** Does a next-step button cover this launch? */
function actionCovers(action: NextAction, intent: LaunchIntent, datasetRunId: string | undefined): boolean {
  switch (action.action) {
    case 'run_benchmark':
      return intent.tool === 'benchmark-launch' && intent.benchmarkId === action.benchmarkId && intent.modelId === action.modelId;
    case 'train_on_failures':
      if (intent.tool === 'dataset-build') {
        return intent.runId === action.runId && intent.heldOutFraction === action.heldOutFraction;
      }
      return intent.tool === 'training-launch' && intent.baseModelId === action.modelId && datasetRunId === action.runId;
    default:
      return false;
  }
}

export async function chatSpentCredits(db: Db, teamId: string, chatId: string): Promise<number> {
  const row = await db
    .selectFrom('resources')
    .select(sql<string>`coalesce(sum(coalesce(price_charged, price_estimate, 0)), 0)`.as('spent'))
    .where('team_id', '=', teamId)
    .where('chat_id', '=', chatId)
    .where('status', '!=', 'failed')
    .executeTakeFirstOrThrow();
  return Number(row.spent);
}

/**
 * Decides a launch. A turn woken by a platform event or the sweep may launch only the plan's next
 * step; a button authorizes exactly its action; a person's own message may launch what they asked
 * for if they may spend in this chat. Above the confirmation threshold, the chat's budget or the
 * available balance, nothing is launched and the decision carries what to approve.
 */
export async function authorizeLaunch(
  ctx: ToolContext,
  intent: LaunchIntent,
  price: { credits: number; availableCredits: number },
  options: { toolUseId: string; datasetRunId?: string },
): Promise<GuardDecision> {
  const earlier = await earlierAuthorization(ctx);
  if (earlier) return earlier;
  // One workspace's decisions are serialized across replicas, so two launches cannot both fit
  // under a cap that has room for one: the allowed one is written before the lock is released.
  return ctx.db.transaction().execute(async (trx) => {
    const inTrx = { ...ctx, db: trx };
    if (price.credits > 0) await lockWorkspaceSpending(trx, ctx.chat.team_id);
    const decision = await decide(inTrx, intent, price, options);
    if (decision.allowed) await rememberAuthorization(inTrx, decision, price.credits);
    return decision;
  });
}

/**
 * The launch this very tool call was allowed before its turn was interrupted. The platform may
 * already have it (the answer was lost with the process) and it may already weigh on the balance
 * and the budget, so judging it again could refuse a launch that exists; it is repeated with the
 * same idempotency key instead, which the platform answers with the launch it has.
 */
async function earlierAuthorization(ctx: ToolContext): Promise<GuardDecision | undefined> {
  if (!ctx.toolUseId || !ctx.turn) return undefined;
  const row = await ctx.db
    .selectFrom('launch_authorizations')
    .select(['idempotency_key', 'plan_step'])
    .where('team_id', '=', ctx.chat.team_id)
    .where('turn_id', '=', ctx.turn.id)
    .where('tool_use_id', '=', ctx.toolUseId)
    .executeTakeFirst();
  return row ? { allowed: true, planStep: row.plan_step as PlanStepKind | null, idempotencyKey: row.idempotency_key } : undefined;
}

/** Written before the platform is called, so a crash after the call still finds it. */
async function rememberAuthorization(ctx: ToolContext, decision: Extract<GuardDecision, { allowed: true }>, credits: number): Promise<void> {
  if (!ctx.toolUseId || !ctx.turn) return;
  await ctx.db
    .insertInto('launch_authorizations')
    .values({
      team_id: ctx.chat.team_id,
      turn_id: ctx.turn.id,
      tool_use_id: ctx.toolUseId,
      idempotency_key: decision.idempotencyKey,
      plan_step: decision.planStep,
      credits: Math.max(0, credits),
      spender_user_id: ctx.chat.owner_user_id,
      chat_id: ctx.chat.id,
    })
    .onConflict((oc) => oc.columns(['turn_id', 'tool_use_id']).doNothing())
    .execute();
}

async function decide(
  ctx: ToolContext,
  intent: LaunchIntent,
  price: { credits: number; availableCredits: number },
  options: { toolUseId: string; datasetRunId?: string },
): Promise<GuardDecision> {
  const plan = parsePlan(ctx.chat.plan);
  const planStep = plan ? matchPlanStep(plan, intent) : undefined;
  const step = plan && planStep ? findStep(plan, planStep) : undefined;
  const stepKey = step ? `chat-${ctx.chat.id}-${planStep}-${step.attempt}${intent.tool === 'dataset-build' ? '-dataset' : ''}` : undefined;
  const adHocKey = `chat-${ctx.chat.id}-${ctx.trigger.id}-${options.toolUseId}`;
  let approved = false;

  switch (ctx.trigger.kind) {
    case 'platform_event':
    case 'reconcile': {
      const next = plan ? nextStep(plan) : undefined;
      if (ctx.chat.decision) {
        return {
          allowed: false,
          reason: 'Refused by the spend guard: the person closed this thread\'s plan with a decision; nothing more is launched here without their new request.',
        };
      }
      if (!plan || !planStep || !next || next.kind !== planStep || next.status === 'failed') {
        return {
          allowed: false,
          reason:
            'Refused by the spend guard: a turn woken by a platform event may only launch the next step of the plan the person agreed to, and this launch is not that step. Report the result and offer the next step as buttons instead.',
        };
      }
      break;
    }
    case 'button': {
      if (!mayApprove(ctx, ctx.trigger.user_id)) {
        return { allowed: false, reason: 'Refused by the spend guard: the person who pressed the button may not spend in this chat.' };
      }
      const grant = await storedGrant(ctx);
      if (grant?.kind === 'approve') {
        if (!sameIntent(grant.intent, intent)) {
          return { allowed: false, reason: 'Refused by the spend guard: the approval button covers a different launch.' };
        }
        if (price.credits > grant.credits + 0.005) {
          return {
            allowed: false,
            reason: `Refused by the spend guard: the price (${price.credits} credits) is above what was approved (${grant.credits}).`,
            approval: { intent, credits: price.credits },
          };
        }
        approved = true;
      } else if (grant?.kind === 'next' && actionCovers(grant.action, intent, options.datasetRunId)) {
        // The button stands for exactly this action.
      } else {
        return { allowed: false, reason: 'Refused by the spend guard: the button pressed does not authorize this launch.' };
      }
      break;
    }
    default: {
      if (!mayApprove(ctx, ctx.trigger.user_id)) {
        return {
          allowed: false,
          reason: `Refused by the spend guard: only <@${ctx.chat.owner_user_id}>, who started this thread, or an admin can spend credits here.`,
        };
      }
    }
  }

  const key = stepKey ?? (ctx.trigger.kind === 'button' ? `chat-${ctx.chat.id}-button-${ctx.trigger.id}-${intent.tool}` : adHocKey);
  if (price.credits <= 0) return { allowed: true, planStep: planStep ?? null, idempotencyKey: key };

  if (price.credits > price.availableCredits) {
    return {
      allowed: false,
      reason: `Not launched: it costs ${price.credits} credits and only ${price.availableCredits} are available. Top up the account, then press Approve.`,
      approval: { intent, credits: price.credits },
    };
  }
  if (!approved) {
    const { confirmThreshold, chatBudget } = ctx.config.spending;
    if (price.credits > confirmThreshold) {
      return {
        allowed: false,
        reason: `Not launched: ${price.credits} credits is above the confirmation threshold of ${confirmThreshold} credits. The person must press Approve.`,
        approval: { intent, credits: price.credits },
      };
    }
    const spent = await chatSpentCredits(ctx.db, ctx.chat.team_id, ctx.chat.id);
    if (spent + price.credits > chatBudget) {
      return {
        allowed: false,
        reason: `Not launched: this thread has spent ${spent.toFixed(2)} credits and this launch (${price.credits}) would pass its budget of ${chatBudget}. The person must press Approve.`,
        approval: { intent, credits: price.credits },
      };
    }
    const caps = ctx.config.spending;
    const figures = await spendingInPeriod(ctx.db, ctx.chat.team_id, ctx.chat.owner_user_id, caps.capPeriodDays);
    const over = capExceeded(figures, price.credits, caps);
    if (over) {
      const whose = over.scope === 'person' ? `<@${ctx.chat.owner_user_id}> has` : 'this workspace has';
      return {
        allowed: false,
        reason: `Not launched: ${whose} spent ${over.spent.toFixed(2)} of ${over.scope === 'person' ? 'their' : 'its'} ${over.cap}-credit cap for the last ${caps.capPeriodDays} days, and this launch (${price.credits}) would pass it. The person must press Approve.`,
        approval: { intent, credits: price.credits },
      };
    }
  }
  return { allowed: true, planStep: planStep ?? null, idempotencyKey: key };
}
