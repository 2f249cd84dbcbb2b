// plan-set: records the steps the person agreed to, so event-woken turns may carry them out.
import { z } from 'zod';
import { failure } from '../../errors.js';
import { currentPlan, savePlan } from '../chat-plan.js';
import { describePlan, PLAN_STEP_KINDS, type Plan } from '../plan.js';
import { mayApprove } from '../spend-guard.js';
import { defineTool, toolError } from './tool.js';

export const planSet = defineTool({
  name: 'plan-set',
  description:
    'Record the plan the person asked for in their message, before launching its first step. Steps, in order, from: baseline_run (benchmark the base model), train (build a training set from the baseline run\'s failed questions and LoRA-train the base model on it), trained_run (benchmark the model the training produced), compare (compare baseline and trained runs). Only for steps the person explicitly asked for. If the baseline run already exists, pass its id as baselineRunId and omit baseline_run.',
  input: z.object({
    benchmarkId: z.string().min(1),
    baseModelId: z.string().min(1).describe('The exact model id from model-lookup'),
    steps: z.array(z.enum(PLAN_STEP_KINDS)).min(1),
    augmentation: z.number().int().min(1).max(20).optional().describe('Copies of each failed question in the training set; default 5'),
    heldOutFraction: z.number().min(0).max(0.9).optional().describe('Share of failed questions kept out of training to measure generalization; default 0'),
    baselineRunId: z.string().optional(),
  }),
  run: async (input, ctx) => {
    if (ctx.authority !== 'person') throw toolError(failure('plan_not_from_message'));
    if (!mayApprove(ctx, ctx.trigger.user_id)) throw toolError(failure('plan_not_owner', { ownerUserId: ctx.chat.owner_user_id }));
    const existing = currentPlan(ctx);
    // This call recorded it before the turn was interrupted (its result never stored): say so again.
    if (existing && ctx.toolUseId && existing.setByToolUseId === ctx.toolUseId) {
      return { content: `Plan recorded:\n${describePlan(existing)}` };
    }
    if (existing && existing.steps.some((s) => s.status === 'launched')) {
      throw toolError(failure('plan_running'));
    }
    const order = PLAN_STEP_KINDS.filter((k) => input.steps.includes(k));
    const steps: Plan['steps'] = order.map((kind) => ({ kind, status: 'pending', attempt: 1 }));
    if (input.baselineRunId) {
      const run = await ctx.platform.getRun(input.baselineRunId);
      if (run.status !== 'completed') throw toolError(failure('run_not_completed', { id: run.id, status: run.status }));
      steps.unshift({ kind: 'baseline_run', status: 'completed', attempt: 1, runId: run.id });
      const seen = new Set<string>();
      steps.splice(0, steps.length, ...steps.filter((s) => (seen.has(s.kind) ? false : (seen.add(s.kind), true))));
    }
    const plan: Plan = {
      agreedBy: ctx.trigger.user_id!,
      agreedAt: new Date().toISOString(),
      benchmarkId: input.benchmarkId,
      baseModelId: input.baseModelId,
      augmentation: input.augmentation ?? 5,
      heldOutFraction: input.heldOutFraction ?? 0,
      steps,
      ...(ctx.toolUseId ? { setByToolUseId: ctx.toolUseId } : {}),
    };
    await savePlan(ctx, plan);
    return { content: `Plan recorded:\n${describePlan(plan)}` };
  },
});
