// Recording a launch: its resource and plan step together, found again after an interruption, and early finish events claimed.
import { claimEarlyReceipt } from '../../store/resource-events.js';
import { setChatPlan } from '../../store/chats.js';
import { markAuthorizationRecorded } from '../../store/launch-authorizations.js';
import { findResourceOfToolCall, upsertResource } from '../../store/resources.js';
import type { Resource, ResourceKind } from '../../store/tables.js';
import { currentPlan } from '../chat-plan.js';
import { updateStep, type PlanStep, type PlanStepKind } from '../plan.js';
import type { ToolContext } from './tool.js';

/**
 * The resource this very tool call launched before its turn was interrupted (the process killed, or
 * the turn retried after an outage) and its result was never stored. A resumed turn runs the call
 * again; it must report that launch, not launch again or be refused for a step it already started.
 * (The spend guard's stored decision alone would replay the launch with the same key; reporting the
 * recorded launch also spares the platform a second write and leaves the plan as it is, which a
 * finish event may have advanced while a retried turn waited.)
 */
export async function launchedByThisCall(ctx: ToolContext, kind: ResourceKind): Promise<Resource | undefined> {
  if (!ctx.toolUseId) return undefined;
  return findResourceOfToolCall(ctx.db, { teamId: ctx.chat.team_id, chatId: ctx.chat.id, turnId: ctx.turn.id, toolUseId: ctx.toolUseId }, kind);
}

/**
 * Records a resource this chat started and, when it is a plan step, marks the step launched, in one
 * transaction: a crash between the two would leave a recorded launch whose step still reads
 * "pending", and the finish event would then find no step to advance and stall the plan.
 */
export async function recordLaunch(
  ctx: ToolContext,
  input: {
    kind: ResourceKind;
    platformId: string;
    planStep: PlanStepKind | null;
    status: string;
    priceEstimate: number | null;
    webUrl: string | null;
    details?: Record<string, unknown>;
    stepChange?: Partial<PlanStep>;
  },
): Promise<void> {
  const plan = currentPlan(ctx);
  const updated = plan && input.planStep ? updateStep(plan, input.planStep, { ...input.stepChange }) : undefined;
  await ctx.db.transaction().execute(async (trx) => {
    await upsertResource(trx, {
      teamId: ctx.chat.team_id,
      chatId: ctx.chat.id,
      turnId: ctx.turn.id,
      kind: input.kind,
      platformId: input.platformId,
      planStep: input.planStep,
      status: input.status,
      priceEstimate: input.priceEstimate,
      webUrl: input.webUrl,
      details: { ...input.details, ...(ctx.toolUseId ? { toolUseId: ctx.toolUseId } : {}) },
    });
    if (updated) await setChatPlan(trx, ctx.chat.team_id, ctx.chat.id, updated);
    // The spend guard stops counting the decision once its launch is recorded here.
    if (ctx.toolUseId) await markAuthorizationRecorded(trx, { teamId: ctx.chat.team_id, turnId: ctx.turn.id, toolUseId: ctx.toolUseId });
  });
  if (updated) ctx.chat.plan = updated;
  await claimEarlyEvents(ctx, input.kind, input.platformId);
}

/**
 * The launch this very call recorded before its turn was interrupted, reported again: early finish
 * events that arrived in between are claimed now (claiming is idempotent), as after a first launch.
 */
export async function resumeLaunch(ctx: ToolContext, earlier: Resource): Promise<void> {
  await claimEarlyEvents(ctx, earlier.kind, earlier.platform_id);
}

/**
 * A fast resource can finish, and its webhook arrive, before the launch is recorded here; the
 * route kept the receipt. Enqueue that event now, for this chat, after the current turn.
 */
async function claimEarlyEvents(ctx: ToolContext, kind: ResourceKind, platformId: string): Promise<void> {
  if (kind !== 'run' && kind !== 'training') return;
  const type = await claimEarlyReceipt(ctx.db, { teamId: ctx.chat.team_id, kind, platformId }, { maxAttempts: ctx.config.agent.eventRetryAttempts });
  if (type) ctx.logger.info({ resourceId: platformId, type }, 'an event that arrived before its launch was recorded is enqueued now');
}
