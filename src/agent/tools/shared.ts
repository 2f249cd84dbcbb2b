// Helpers the tools share: saving the plan, recording a launched resource, compact formatting.
import { setChatPlan } from '../../store/chats.js';
import { upsertResource } from '../../store/resources.js';
import type { ResourceKind } from '../../store/tables.js';
import { parsePlan, updateStep, type Plan, type PlanStep, type PlanStepKind } from '../plan.js';
import type { ToolContext } from './tool.js';

export async function savePlan(ctx: ToolContext, plan: Plan): Promise<void> {
  await setChatPlan(ctx.db, ctx.chat.team_id, ctx.chat.id, plan);
  ctx.chat.plan = plan;
}

export function currentPlan(ctx: ToolContext): Plan | undefined {
  return parsePlan(ctx.chat.plan);
}

/** Records a resource this chat started and, when it is a plan step, marks the step launched. */
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
  await upsertResource(ctx.db, {
    teamId: ctx.chat.team_id,
    chatId: ctx.chat.id,
    turnId: ctx.turn.id,
    kind: input.kind,
    platformId: input.platformId,
    planStep: input.planStep,
    status: input.status,
    priceEstimate: input.priceEstimate,
    webUrl: input.webUrl,
    ...(input.details ? { details: input.details } : {}),
  });
  const plan = currentPlan(ctx);
  if (plan && input.planStep) {
    await savePlan(ctx, updateStep(plan, input.planStep, { ...input.stepChange }));
  }
}

export function pct(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? 'n/a' : `${(rate * 100).toFixed(1)}%`;
}

export function sandboxNote(ctx: ToolContext): string {
  return ctx.sandbox ? ' (sandbox platform: simulated, no real GPU)' : '';
}
