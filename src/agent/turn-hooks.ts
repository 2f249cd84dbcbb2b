// Turn hooks: who may press a button, what the model reads for each trigger, what follows a turn.
import type { Run, TrainingJob } from '../platform/platform.js';
import { boundInbound, INBOUND_LIMITS } from './input-limits.js';
import { findResourceByPlatformId, rearmResourceEvent, updateResourceStatus } from '../store/resources.js';
import { describePlan, findStep, nextStep, parsePlan, updateStep, type Plan, type PlanStepKind } from './plan.js';
import { recordDecision } from '../store/decisions.js';
import { mayApprove, storedGrant } from './spend-guard.js';
import { describeRun } from './tools/run-status.js';
import { savePlan } from './tools/shared.js';
import type { ToolContext } from './tools/tool.js';
import { describeTraining } from './tools/training-status.js';
import { renderTriggerText, type SkipTurn, type TurnHooks } from './turn.js';

export function createTurnHooks(options: { enqueueHome(teamId: string, userId: string, view: { refresh: true }): Promise<void> }): TurnHooks {
  return {
    preflight: async (ctx) => {
      if (ctx.trigger.kind !== 'button' && ctx.trigger.kind !== 'retry') return undefined;
      if (mayApprove(ctx, ctx.trigger.user_id)) return undefined;
      return {
        refuse: {
          ephemeral: `Only <@${ctx.chat.owner_user_id}>, who started this thread, or an admin can use these buttons: they spend credits. Nothing was changed.`,
        },
      };
    },
    renderTrigger: async (ctx) => {
      switch (ctx.trigger.kind) {
        case 'platform_event':
        case 'reconcile':
          return renderPlatformEvent(ctx);
        case 'button':
          return renderButton(ctx);
        default:
          return renderWithPlan(ctx, renderTriggerText(ctx.trigger));
      }
    },
    afterTurn: async (ctx) => {
      await options.enqueueHome(ctx.chat.team_id, ctx.chat.owner_user_id, { refresh: true });
    },
  };
}

function renderWithPlan(ctx: ToolContext, text: string): string {
  const plan = parsePlan(ctx.chat.plan);
  return plan ? `${text}\n\n[Agreed plan of this thread]\n${describePlan(plan)}` : text;
}

async function renderButton(ctx: ToolContext): Promise<string | SkipTurn> {
  const grant = await storedGrant(ctx);
  const who = `<@${ctx.trigger.user_id}>`;
  if (!grant) return { skip: 'a button trigger without a stored grant: nothing was offered, nothing is done' };
  if (grant.kind === 'next' && grant.action.action === 'keep_model') {
    const label = String((ctx.trigger.payload as { label?: unknown }).label ?? 'Keep this model');
    const decision = await recordDecision(ctx.db, ctx.chat.team_id, ctx.chat.id, {
      kind: 'keep_model',
      modelId: grant.action.modelId,
      label,
      by: ctx.trigger.user_id ?? ctx.chat.owner_user_id,
      at: new Date().toISOString(),
    });
    ctx.chat.decision = decision;
    return `[${who} pressed "${label}"] Recorded in code: this thread keeps the model ${decision.modelId} (decided by <@${decision.by}>), and its plan is closed: nothing more will be launched here unless the person asks again. Confirm this to them in one or two sentences; launch nothing.`;
  }
  switch (grant.kind) {
    case 'approve':
      return renderWithPlan(ctx, `[${who} pressed "Approve ${grant.credits} credits"] They approve exactly this launch: ${JSON.stringify(grant.intent)}. Make it now with the matching tool, then report.`);
    case 'next':
      return renderWithPlan(ctx, `[${who} pressed the next-step button] They ask for exactly this step: ${JSON.stringify(grant.action)}. Do it (for train_on_failures: dataset-build on that run with that held-out fraction, then training-launch of that model), then report.`);
    case 'pick':
      return renderWithPlan(ctx, `[${who} picked an option] ${boundInbound(grant.text, INBOUND_LIMITS.buttonValue)}`);
    case 'retry':
      return renderWithPlan(ctx, `[${who} pressed Retry] Continue where the conversation stopped.`);
  }
}

/**
 * Fetches the resource behind a platform event (the webhook body is only a pointer), records its
 * status and price, advances the plan in code, and tells the model what happened and what is next.
 */
async function renderPlatformEvent(ctx: ToolContext): Promise<string | SkipTurn> {
  const payload = ctx.trigger.payload as { type: string; resourceKind: 'run' | 'training'; resourceId: string };
  const resource = await findResourceByPlatformId(ctx.db, payload.resourceKind, payload.resourceId);
  let facts: string;
  let outcome: 'completed' | 'failed' | 'cancelled' | 'running';
  let step: PlanStepKind | null = (resource?.plan_step as PlanStepKind | null) ?? null;
  let producedModelId: string | null = null;
  /** How far a cancelled run or training got, and what it cost. */
  let stopped = '';
  if (payload.resourceKind === 'run') {
    const run: Run = await ctx.platform.getRun(payload.resourceId);
    facts = describeRun(run);
    outcome = run.status === 'queued' ? 'running' : run.status;
    if (run.progress) stopped = `${run.progress.done} of ${run.progress.total} questions answered, `;
    stopped += `charged ${run.chargedCredits ?? 0} of ${run.priceCredits} credits`;
    if (resource) {
      await updateResourceStatus(ctx.db, ctx.chat.team_id, resource.id, {
        status: run.status,
        priceCharged: run.chargedCredits,
        finished: outcome !== 'running',
        details: { score: run.score },
      });
    }
  } else {
    const job: TrainingJob = await ctx.platform.getTraining(payload.resourceId);
    facts = describeTraining(job);
    outcome = job.status === 'queued' ? 'running' : job.status;
    stopped = `${Math.round(job.progress * 100)}% trained, charged ${job.priceChargedCredits ?? 0} of ${job.priceEstimatedCredits} credits`;
    producedModelId = job.producedModelId;
    if (resource) {
      await updateResourceStatus(ctx.db, ctx.chat.team_id, resource.id, {
        status: job.status,
        priceCharged: job.priceChargedCredits,
        finished: outcome !== 'running',
        details: { producedModelId: job.producedModelId },
      });
    }
  }

  if (outcome === 'running') {
    // The event came before the resource finished (an early or forged signal): no turn now. Its
    // finish must still wake the chat, so the resource goes back to the sweep and this trigger
    // gives up its dedupe key for the real event.
    return {
      skip: `${payload.type} arrived while ${payload.resourceId} is still running; waiting for it to finish`,
      ...(resource ? { onSkip: (db) => rearmResourceEvent(db, ctx.chat.team_id, resource.id, ctx.trigger.id) } : {}),
    };
  }

  let plan: Plan | undefined = parsePlan(ctx.chat.plan);
  if (plan && step && findStep(plan, step)?.status === 'launched') {
    plan = updateStep(
      plan,
      step,
      outcome === 'completed' ? { status: 'completed' } : { status: 'failed', error: outcome === 'cancelled' ? `cancelled: ${facts}` : facts },
    );
    if (step === 'train' && outcome === 'completed' && producedModelId) plan = { ...plan, trainedModelId: producedModelId };
    await savePlan(ctx, plan);
  } else if (!plan) {
    step = null;
  }

  const cancelled = `The ${payload.resourceKind} was cancelled (${stopped}): tell the person plainly that the ${payload.resourceKind} was cancelled, what it had done and what it cost. Launch nothing.`;
  const lines = [`[Platform event ${payload.type}${ctx.trigger.kind === 'reconcile' ? ' (found by the sweep; its webhook never arrived)' : ''}]`, facts];
  if (plan) {
    lines.push(`[Agreed plan of this thread]\n${describePlan(plan)}`);
    const next = nextStep(plan);
    if (outcome === 'cancelled') {
      lines.push(cancelled);
    } else if (outcome === 'failed') {
      lines.push('The step failed: report it plainly to the person and launch nothing; offer to retry.');
    } else if (next) {
      const hints: Record<PlanStepKind, string> = {
        baseline_run: `launch the baseline run (benchmark ${plan.benchmarkId} on ${plan.baseModelId})`,
        train: `build the training set from run ${findStep(plan, 'baseline_run')?.runId ?? '?'} (dataset-build) and launch the LoRA training of ${plan.baseModelId} on it (training-launch)`,
        trained_run: `launch benchmark ${plan.benchmarkId} on the trained model ${plan.trainedModelId ?? '?'}`,
        compare: `compare run ${findStep(plan, 'baseline_run')?.runId ?? '?'} (before) with run ${findStep(plan, 'trained_run')?.runId ?? '?'} (after) with benchmark-analyze`,
      };
      lines.push(`Next step of the plan, to do now without asking: ${hints[next.kind]}. Report the result first, then what you launched and what happens next.`);
    } else {
      lines.push('The plan is complete.');
    }
  } else if (outcome === 'cancelled') {
    lines.push(cancelled);
  } else {
    lines.push('No plan was agreed in this thread: report the result and offer the natural next steps with offer-next-steps. Launch nothing.');
  }
  return lines.join('\n');
}
