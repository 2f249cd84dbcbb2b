// Slack's Stop button on the thread's agent session: only the owner or an admin; cancels what runs
// on the platform, closes the plan and the open buttons, and says in code what was stopped and what it cost.
import { failure } from '../../errors.js';
import { isPlatformError } from '@verdict/contract/errors';
import type { Run, TrainingJob } from '@verdict/contract/platform';
import { chatCosts, claimStop, closeOpenChoices, listWorkingResources } from '../../store/agent-sessions.js';
import { updateResourceStatus } from '../../store/resources.js';
import type { Resource } from '../../store/tables.js';
import { currentPlan, savePlan } from '../chat-plan.js';
import type { Plan } from '../plan.js';
import { mayApprove } from '../spend-guard.js';
import type { Prepared, TriggerContext, TriggerHandler } from './handler.js';

/** What happened to one run or training the stop found working. */
export interface StoppedResource {
  kind: 'run' | 'training';
  id: string;
  /** `cancelled`, or the status it had already reached (it finished before the cancel arrived). */
  status: string;
  /** "4 of 100 questions answered" / "35% trained"; empty when unknown. */
  progress: string;
  chargedCredits: number;
  priceCredits: number;
  /** Set when the platform could not be asked (the cancel is to be retried by hand). */
  error?: string;
}

export interface StopFacts {
  userId: string;
  ownerUserId: string;
  stopped: StoppedResource[];
  /** Plan steps that will not run now. */
  droppedSteps: number;
  closedButtons: number;
  thread: { credits: number; agentUsd: number };
}

async function cancelOne(ctx: TriggerContext, resource: Resource): Promise<StoppedResource> {
  const kind = resource.kind as 'run' | 'training';
  const base = { kind, id: resource.platform_id };
  try {
    let run: Run | undefined;
    let job: TrainingJob | undefined;
    try {
      if (kind === 'run') run = await ctx.platform.cancelRun(resource.platform_id);
      else job = await ctx.platform.cancelTraining(resource.platform_id);
    } catch (error) {
      // It finished while the Stop was on its way: nothing to cancel, report what it became.
      if (!isPlatformError(error) || error.code !== 'already_finished') throw error;
      if (kind === 'run') run = await ctx.platform.getRun(resource.platform_id);
      else job = await ctx.platform.getTraining(resource.platform_id);
    }
    if (run) {
      await updateResourceStatus(ctx.db, ctx.chat.team_id, resource.id, { status: run.status, priceCharged: run.chargedCredits, finished: true, details: { score: run.score } });
      return {
        ...base,
        status: run.status,
        progress: run.progress ? `${run.progress.done} of ${run.progress.total} questions answered` : '',
        chargedCredits: run.chargedCredits ?? 0,
        priceCredits: run.priceCredits,
      };
    }
    const t = job!;
    await updateResourceStatus(ctx.db, ctx.chat.team_id, resource.id, { status: t.status, priceCharged: t.priceChargedCredits, finished: true, details: { producedModelId: t.producedModelId } });
    return { ...base, status: t.status, progress: `${Math.round(t.progress * 100)}% trained`, chargedCredits: t.priceChargedCredits ?? 0, priceCredits: t.priceEstimatedCredits };
  } catch (error) {
    ctx.logger.error({ err: error, kind, platformId: resource.platform_id }, 'stop: could not cancel on the platform');
    return { ...base, status: resource.status, progress: '', chargedCredits: Number(resource.price_charged ?? 0), priceCredits: Number(resource.price_estimate ?? 0), error: (error as Error).message };
  }
}

/**
 * Marks every step not done yet as failed "stopped", so the plan shows where it ended; counts the
 * steps that had not started (a launched one is reported as cancelled instead).
 */
function closePlan(plan: Plan, by: string): { plan: Plan; dropped: number } {
  let dropped = 0;
  const steps = plan.steps.map((step) => {
    if (step.status === 'completed' || step.status === 'failed') return step;
    if (step.status === 'pending') dropped += 1;
    return { ...step, status: 'failed' as const, error: `stopped by ${by}` };
  });
  return { plan: { ...plan, steps }, dropped };
}

async function prepareStop(ctx: TriggerContext): Promise<Prepared<StopFacts>> {
  const userId = ctx.trigger.user_id!;
  const stop = await claimStop(ctx.db, ctx.chat.team_id, ctx.chat.id, { userId, triggerId: ctx.trigger.id });
  if (stop.triggerId !== ctx.trigger.id) return { skip: `the thread was already stopped by ${stop.stoppedBy} at ${stop.stoppedAt.toISOString()}` };
  ctx.chat.stopped_at = stop.stoppedAt;
  ctx.chat.stopped_by = stop.stoppedBy;
  const working = await listWorkingResources(ctx.db, ctx.chat.team_id, ctx.chat.id, stop.stoppedAt);
  const stopped: StoppedResource[] = [];
  for (const resource of working) stopped.push(await cancelOne(ctx, resource));
  let droppedSteps = 0;
  const plan = currentPlan(ctx);
  if (plan) {
    const closed = closePlan(plan, userId);
    droppedSteps = closed.dropped;
    if (closed.dropped > 0) await savePlan(ctx, closed.plan);
  }
  const closedButtons = await closeOpenChoices(ctx.db, ctx.chat.team_id, ctx.chat.id, userId);
  const thread = await chatCosts(ctx.db, ctx.chat.team_id, ctx.chat.id);
  return { facts: { userId, ownerUserId: ctx.chat.owner_user_id, stopped, droppedSteps, closedButtons, thread } };
}

function describeStopped(s: StoppedResource): string {
  const name = `${s.kind === 'run' ? 'Run' : 'Training'} ${s.id}`;
  if (s.error) return `${name}: could not be cancelled (${s.error}); it may still be working and charging`;
  const done = s.progress ? `${s.progress}, ` : '';
  if (s.status === 'cancelled') return `${name}: cancelled (${done}charged ${s.chargedCredits} of ${s.priceCredits} credits)`;
  return `${name}: had already ${s.status === 'completed' ? 'completed' : s.status} (charged ${s.chargedCredits} credits)`;
}

/** The thread's message: who stopped, what was cancelled and what it cost, and that nothing more starts. */
export function stopReplyText(facts: StopFacts): string {
  // The message is addressed to the thread's owner; it may mention no one else (see fromModelMarkdown).
  const who = facts.userId === facts.ownerUserId ? 'You pressed Stop' : 'An admin pressed Stop';
  const lines = [`*Stopped.* ${who}: nothing more will be launched in this thread.`];
  if (facts.stopped.length === 0) lines.push('Nothing was running on the platform.');
  else lines.push(...facts.stopped.map((s) => `• ${describeStopped(s)}`));
  if (facts.droppedSteps > 0) lines.push(`${facts.droppedSteps} step${facts.droppedSteps === 1 ? '' : 's'} of the plan will not run.`);
  if (facts.closedButtons > 0) lines.push('The buttons offered in this thread are closed.');
  lines.push(`This thread cost ${round(facts.thread.credits)} credits on the platform and $${facts.thread.agentUsd.toFixed(4)} of agent time. Mention me to start again.`);
  return lines.join('\n');
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

export const stopHandler: TriggerHandler<StopFacts> = {
  authority: 'person',
  automatic: false,
  authorize: (ctx) => (mayApprove(ctx, ctx.trigger.user_id) ? undefined : failure('stop_not_allowed', { ownerUserId: ctx.chat.owner_user_id })),
  prepare: prepareStop,
  render: (facts) =>
    `[<@${facts.userId}> pressed Slack's Stop button] The loop of this thread is stopped, in code: ${
      facts.stopped.map(describeStopped).join('; ') || 'nothing was running'
    }. No plan step will be launched automatically any more; launch nothing unless a person asks again.`,
  reply: (facts) => {
    const cancelled = facts.stopped.filter((s) => s.status === 'cancelled').map((s) => `${s.kind} ${s.id}`);
    return { text: stopReplyText(facts), summary: `Stopped by <@${facts.userId}>${cancelled.length ? `: cancelled ${cancelled.join(', ')}` : ''}` };
  },
};
