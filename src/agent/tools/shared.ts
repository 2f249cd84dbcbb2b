// Helpers the tools share: saving the plan, recording a launched resource, compact formatting.
import { sql } from 'kysely';
import { setChatPlan } from '../../store/chats.js';
import { findResourceByPlatformId, markResourceNotified, resourceEventKey, upsertResource } from '../../store/resources.js';
import { enqueueTrigger } from '../../store/triggers.js';
import type { Resource, ResourceKind } from '../../store/tables.js';
import { parsePlan, PLAN_STEP_KINDS, updateStep, type Plan, type PlanStep, type PlanStepKind } from '../plan.js';
import { ToolError, type ToolContext } from './tool.js';

/** Refuses a run or training another workspace started: platform ids are global, what they show is not. */
export async function requireOwnResource(ctx: ToolContext, kind: ResourceKind, platformId: string): Promise<void> {
  const resource = await findResourceByPlatformId(ctx.db, kind, platformId);
  if (resource && resource.team_id !== ctx.chat.team_id) throw new ToolError(`No ${kind} ${platformId} was found.`);
}

export async function savePlan(ctx: ToolContext, plan: Plan): Promise<void> {
  await setChatPlan(ctx.db, ctx.chat.team_id, ctx.chat.id, plan);
  ctx.chat.plan = plan;
}

export function currentPlan(ctx: ToolContext): Plan | undefined {
  return parsePlan(ctx.chat.plan);
}

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
  return ctx.db
    .selectFrom('resources')
    .selectAll()
    .where('team_id', '=', ctx.chat.team_id)
    .where('chat_id', '=', ctx.chat.id)
    .where('turn_id', '=', ctx.turn.id)
    .where('kind', '=', kind)
    .where(sql<string>`details->>'toolUseId'`, '=', ctx.toolUseId)
    .executeTakeFirst();
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
 * route kept the receipt. Enqueue those events now, for this chat, after the current turn.
 */
async function claimEarlyEvents(ctx: ToolContext, kind: ResourceKind, platformId: string): Promise<void> {
  if (kind !== 'run' && kind !== 'training') return;
  const early = await ctx.db
    .selectFrom('webhook_receipts')
    .select(['webhook_id', 'type'])
    .where('resource_id', '=', platformId)
    .where('type', 'like', `${kind}.%`)
    .execute();
  for (const receipt of early) {
    const outcome = receipt.type.endsWith('.completed') ? 'completed' : 'failed';
    const resource = await findResourceByPlatformId(ctx.db, kind, platformId);
    if (!resource || resource.notified_at) return;
    await ctx.db.transaction().execute(async (trx) => {
      await enqueueTrigger(
        trx,
        { chatId: ctx.chat.id },
        {
          teamId: ctx.chat.team_id,
          kind: 'platform_event',
          dedupeKey: resourceEventKey(kind, platformId, outcome),
          userId: null,
          payload: { type: receipt.type, resourceKind: kind, resourceId: platformId, webhookId: receipt.webhook_id },
        },
        { maxAttempts: ctx.config.agent.eventRetryAttempts },
      );
      await markResourceNotified(trx, ctx.chat.team_id, resource.id);
    });
    ctx.logger.info({ resourceId: platformId, type: receipt.type }, 'an event that arrived before its launch was recorded is enqueued now');
  }
}

export function pct(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? 'n/a' : `${(rate * 100).toFixed(1)}%`;
}

/**
 * What did the work, for a launch report: the engine the platform names on the run or training
 * (`engine`), else the configured one, else the sandbox's simulation.
 */
export function sandboxNote(ctx: ToolContext, engine?: string | null): string {
  const label = engine && engine !== 'simulator' ? engine : (ctx.engine ?? null);
  if (label) return ` (engine: ${label})`;
  return ctx.sandbox ? ' (sandbox platform: simulated, no real GPU)' : '';
}

/**
 * The balance line after a launch. Best effort: the launch already happened, so a failed read must
 * not turn it into an error the model would report (or retry).
 */
export async function balanceAfterLaunch(ctx: ToolContext): Promise<string> {
  try {
    const after = await ctx.platform.getBalance();
    return `Balance ${after.balanceCredits} credits (${after.availableCredits} available after reserving work in flight)`;
  } catch (error) {
    ctx.logger.warn({ err: error }, 'balance read after a launch failed');
    return 'The balance could not be read just now (the launch itself succeeded)';
  }
}

const STEP_WORDS: Record<PlanStepKind, string> = {
  baseline_run: 'the baseline run',
  train: 'the training',
  trained_run: 'the run of the trained model',
  compare: 'the comparison',
};

/** A plan step in the user's words: "step 1 of 4 of the agreed plan (the baseline run)". */
export function describePlanStep(ctx: ToolContext, step: string | null): string | null {
  if (!step || !(PLAN_STEP_KINDS as readonly string[]).includes(step)) return null;
  const kind = step as PlanStepKind;
  const plan = currentPlan(ctx);
  const index = plan ? plan.steps.findIndex((s) => s.kind === kind) : -1;
  if (!plan || index < 0) return `${STEP_WORDS[kind]} of the agreed plan`;
  return `step ${index + 1} of ${plan.steps.length} of the agreed plan (${STEP_WORDS[kind]})`;
}

/**
 * When a launched step should finish, from the platform's `estimatedFinishAt`: "about 6 min,
 * around 14:32 UTC". Times are UTC (the bot does not know the person's time zone) and say so; a
 * finish more than 20 hours away names its date. Null when the platform gave no estimate.
 */
export function finishEstimate(estimatedFinishAt: string | null, now: Date = new Date()): string | null {
  if (!estimatedFinishAt) return null;
  const at = new Date(estimatedFinishAt);
  if (Number.isNaN(at.getTime())) return null;
  const ms = at.getTime() - now.getTime();
  const clock = at.toISOString().slice(11, 16);
  if (ms <= 0) return `any moment now (it was due around ${clock} UTC)`;
  const minutes = Math.round(ms / 60_000);
  const span =
    ms < 60_000
      ? 'under a minute'
      : minutes < 60
        ? `about ${minutes} min`
        : `about ${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
  const day = ms > 20 * 3_600_000 ? `${at.toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' })} ` : '';
  return `${span}, around ${day}${clock} UTC`;
}

/** The end of a launch report: which plan step it is and when the platform expects it to finish. */
export function launchOutlook(
  ctx: ToolContext,
  planStep: string | null,
  resource: { status: string; estimatedFinishAt: string | null },
): string {
  const step = describePlanStep(ctx, planStep);
  const thisIs = step ? ` This is ${step}.` : '';
  if (resource.status === 'completed' || resource.status === 'failed') return `${thisIs} It has already ${resource.status === 'failed' ? 'failed' : 'finished'}.`;
  const eta = finishEstimate(resource.estimatedFinishAt);
  const when = eta ? `Estimated finish: ${eta}; the platform` : 'The platform gave no finish estimate; it';
  return `${thisIs} ${when} will signal when it finishes.`;
}
