// A button click: only the thread's owner or an admin; the model is told exactly what the stored grant stands for.
import { failure } from '../../errors.js';
import { boundInbound, INBOUND_LIMITS } from '../input-limits.js';
import { recordDecision, type ChatDecision } from '../../store/decisions.js';
import { currentPlan } from '../chat-plan.js';
import type { Plan } from '../plan.js';
import { mayApprove, storedGrant, type ButtonGrant } from '../spend-guard.js';
import { withPlan, type TriggerContext, type TriggerHandler } from './handler.js';

export type ButtonFacts =
  | { userId: string | null; grant: ButtonGrant; plan: Plan | undefined }
  | { userId: string | null; kept: ChatDecision };

function authorize(ctx: TriggerContext) {
  return mayApprove(ctx, ctx.trigger.user_id) ? undefined : failure('button_not_allowed', { ownerUserId: ctx.chat.owner_user_id });
}

export const buttonHandler: TriggerHandler<ButtonFacts> = {
  authority: 'button',
  automatic: false,
  authorize,
  prepare: async (ctx) => {
    const grant = await storedGrant(ctx);
    if (!grant) return { skip: 'a button trigger without a stored grant: nothing was offered, nothing is done' };
    if (grant.kind === 'next' && grant.action.action === 'keep_model') {
      // Keeping a model closes the plan, in code: the spend policy refuses any further automatic launch.
      const decision = await recordDecision(ctx.db, ctx.chat.team_id, ctx.chat.id, {
        kind: 'keep_model',
        modelId: grant.action.modelId,
        label: String((ctx.trigger.payload as { label?: unknown }).label ?? 'Keep this model'),
        by: ctx.trigger.user_id ?? ctx.chat.owner_user_id,
        at: new Date().toISOString(),
      });
      ctx.chat.decision = decision;
      return { facts: { userId: ctx.trigger.user_id, kept: decision } };
    }
    return { facts: { userId: ctx.trigger.user_id, grant, plan: currentPlan(ctx) } };
  },
  render: (facts) => {
    const who = `<@${facts.userId}>`;
    if ('kept' in facts) {
      const { kept } = facts;
      return `[${who} pressed "${kept.label}"] Recorded in code: this thread keeps the model ${kept.modelId} (decided by <@${kept.by}>), and its plan is closed: nothing more will be launched here unless the person asks again. Confirm this to them in one or two sentences; launch nothing.`;
    }
    const { grant, plan } = facts;
    switch (grant.kind) {
      case 'approve':
        return withPlan(`[${who} pressed "Approve ${grant.credits} credits"] They approve exactly this launch: ${JSON.stringify(grant.intent)}. Make it now with the matching tool, then report.`, plan);
      case 'next':
        return withPlan(`[${who} pressed the next-step button] They ask for exactly this step: ${JSON.stringify(grant.action)}. Do it (for train_on_failures: dataset-build on that run with that held-out fraction, then training-launch of that model), then report.`, plan);
      case 'pick':
        return withPlan(`[${who} picked an option] ${boundInbound(grant.text, INBOUND_LIMITS.buttonValue)}`, plan);
      case 'retry':
        return withPlan(`[${who} pressed Retry] Continue where the conversation stopped.`, plan);
    }
  },
};

export interface RetryFacts {
  userId: string | null;
  plan: Plan | undefined;
}

/**
 * The older `retry` trigger (a retry asked for outside a button's grant): allowed to the same people
 * as a button, and spending as a person's own request.
 */
export const retryHandler: TriggerHandler<RetryFacts> = {
  authority: 'person',
  automatic: false,
  authorize,
  prepare: async (ctx) => ({ facts: { userId: ctx.trigger.user_id, plan: currentPlan(ctx) } }),
  render: (facts) => withPlan(`[<@${facts.userId}> asked to retry. Continue where the conversation stopped.]`, facts.plan),
};
