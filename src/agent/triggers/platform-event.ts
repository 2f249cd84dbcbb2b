// A platform event (run or training finished, failed or cancelled): fetch the resource, record it, advance the plan, say what is next.
import type { Run, TrainingJob } from '@verdict/contract/platform';
import { rearmResourceEvent } from '../../store/resource-events.js';
import type { Db } from '../../store/db.js';
import { findResourceByPlatformId, updateResourceStatus } from '../../store/resources.js';
import { currentPlan, savePlan } from '../chat-plan.js';
import { describePlan, findStep, nextStep, updateStep, type Plan, type PlanStepKind } from '../plan.js';
import { describeRun } from '../tools/run-status.js';
import { describeTraining } from '../tools/training-status.js';
import type { Prepared, TriggerContext, TriggerHandler } from './handler.js';

/** What the webhook (or the sweep) said: only a pointer; the resource is fetched before acting. */
export interface ResourceEventPayload {
  type: string;
  resourceKind: 'run' | 'training';
  resourceId: string;
}

export interface ResourceEventFacts {
  type: string;
  kind: 'run' | 'training';
  /** The resource as the platform reports it now, in one line. */
  resource: string;
  outcome: 'completed' | 'failed' | 'cancelled';
  /** How far a cancelled run or training got and what it cost, e.g. "4 of 30 questions answered, charged 0.06 of 0.51 credits". */
  stopped: string;
  /** The plan after this event advanced it, if the thread has one. */
  plan: Plan | undefined;
}

/**
 * Fetches the resource behind the event (the webhook body is only a pointer), records its status
 * and price, and advances the plan in code. An event for a resource still running (early or
 * forged) starts no turn: the resource goes back to the sweep and the trigger gives up its dedupe
 * key for the real finish.
 */
async function prepareResourceEvent(ctx: TriggerContext): Promise<Prepared<ResourceEventFacts>> {
  const payload = ctx.trigger.payload as unknown as ResourceEventPayload;
  const resource = await findResourceByPlatformId(ctx.db, payload.resourceKind, payload.resourceId);
  let described: string;
  let outcome: ResourceEventFacts['outcome'] | 'running';
  let producedModelId: string | null = null;
  let stopped = '';
  let recorded: Parameters<typeof updateResourceStatus>[3];
  if (payload.resourceKind === 'run') {
    const run: Run = await ctx.platform.getRun(payload.resourceId);
    described = describeRun(run);
    outcome = run.status === 'queued' ? 'running' : run.status;
    if (run.progress) stopped = `${run.progress.done} of ${run.progress.total} questions answered, `;
    stopped += `charged ${run.chargedCredits ?? 0} of ${run.priceCredits} credits`;
    recorded = { status: run.status, priceCharged: run.chargedCredits, finished: outcome !== 'running', details: { score: run.score } };
  } else {
    const job: TrainingJob = await ctx.platform.getTraining(payload.resourceId);
    described = describeTraining(job);
    outcome = job.status === 'queued' ? 'running' : job.status;
    stopped = `${Math.round(job.progress * 100)}% trained, charged ${job.priceChargedCredits ?? 0} of ${job.priceEstimatedCredits} credits`;
    producedModelId = job.producedModelId;
    recorded = { status: job.status, priceCharged: job.priceChargedCredits, finished: outcome !== 'running', details: { producedModelId: job.producedModelId } };
  }

  // The step this outcome finishes, advanced in code; not while the resource runs, nor in a stopped thread.
  let plan = currentPlan(ctx);
  let advanced: Plan | undefined;
  const step = (resource?.plan_step as PlanStepKind | null) ?? null;
  if (outcome !== 'running' && !ctx.chat.stopped_at && plan && step && findStep(plan, step)?.status === 'launched') {
    advanced = updateStep(
      plan,
      step,
      outcome === 'completed' ? { status: 'completed' } : { status: 'failed', error: outcome === 'cancelled' ? `cancelled: ${described}` : described },
    );
    if (step === 'train' && outcome === 'completed' && producedModelId) advanced = { ...advanced, trainedModelId: producedModelId };
  }
  // The resource's outcome and the plan step it finishes are written together.
  const write = async (db: Db) => {
    if (resource) await updateResourceStatus(db, ctx.chat.team_id, resource.id, recorded);
    if (advanced) await savePlan({ db, chat: ctx.chat }, advanced);
  };
  await (resource && advanced ? ctx.db.transaction().execute(write) : write(ctx.db));
  if (advanced) plan = advanced;

  if (outcome === 'running') {
    return {
      skip: `${payload.type} arrived while ${payload.resourceId} is still running; waiting for it to finish`,
      ...(resource ? { onSkip: (db) => rearmResourceEvent(db, ctx.chat.team_id, resource.id, ctx.trigger.id) } : {}),
    };
  }

  // A stopped thread already said what was stopped and what it cost; the event only records the result.
  if (ctx.chat.stopped_at) return { skip: `${payload.type}: the thread was stopped; recorded without a turn` };

  return { facts: { type: payload.type, kind: payload.resourceKind, resource: described, outcome, stopped, plan } };
}

/** What the model reads: the result, the plan, and what to do now (the next step, or nothing). */
export function renderResourceEvent(facts: ResourceEventFacts, source: { foundBySweep: boolean }): string {
  const { plan } = facts;
  const lines = [`[Platform event ${facts.type}${source.foundBySweep ? ' (found by the sweep; its webhook never arrived)' : ''}]`, facts.resource];
  const cancelled = `The ${facts.kind} was cancelled (${facts.stopped}): tell the person plainly that the ${facts.kind} was cancelled, what it had done and what it cost. Launch nothing.`;
  if (!plan) {
    lines.push(facts.outcome === 'cancelled' ? cancelled : 'No plan was agreed in this thread: report the result and offer the natural next steps with offer-next-steps. Launch nothing.');
    return lines.join('\n');
  }
  lines.push(`[Agreed plan of this thread]\n${describePlan(plan)}`);
  const next = nextStep(plan);
  if (facts.outcome === 'cancelled') {
    lines.push(cancelled);
  } else if (facts.outcome === 'failed') {
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
  return lines.join('\n');
}

/** A handler for events about a launched resource; the webhook's and the sweep's differ only in what the model is told. */
export function resourceEventHandler(source: { foundBySweep: boolean }): TriggerHandler<ResourceEventFacts> {
  return {
    authority: 'plan',
    automatic: true,
    authorize: () => undefined,
    prepare: prepareResourceEvent,
    render: (facts) => renderResourceEvent(facts, source),
  };
}

/** A signed platform webhook: a run or training finished or failed. */
export const platformEventHandler = resourceEventHandler({ foundBySweep: false });
