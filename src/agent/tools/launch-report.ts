// The words of a launch report: what did the work, the balance after, the plan step, and when it should finish.
import { currentPlan } from '../chat-plan.js';
import { PLAN_STEP_KINDS, type PlanStepKind } from '../plan.js';
import type { ToolContext } from './tool.js';

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
  if (resource.status === 'completed' || resource.status === 'failed' || resource.status === 'cancelled') {
    return `${thisIs} It has already ${resource.status === 'completed' ? 'finished' : resource.status}.`;
  }
  const eta = finishEstimate(resource.estimatedFinishAt);
  const when = eta ? `Estimated finish: ${eta}; the platform` : 'The platform gave no finish estimate; it';
  return `${thisIs} ${when} will signal when it finishes.`;
}
