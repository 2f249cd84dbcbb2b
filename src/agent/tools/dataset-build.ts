// dataset-build: a training set from a run's failed questions (augmented, optionally with a held-out split).
import { z } from 'zod';
import { currentPlan } from '../chat-plan.js';
import { authorizeLaunch } from '../spend-guard.js';
import { launchedByThisCall, recordLaunch, resumeLaunch } from './launch-record.js';
import { refusalResult } from './launch-refusal.js';
import { requireOwnResource } from './own-resource.js';
import { defineTool } from './tool.js';

export const datasetBuild = defineTool({
  name: 'dataset-build',
  description:
    "Build a training set from a completed run's failed questions with their expected answers, each augmented N times (default 5, or the plan's). Optionally keep a fraction of the failures out of training (held out) to measure generalization. Returns the dataset id and how many questions are trained on and held out.",
  input: z.object({
    runId: z.string().min(1),
    augmentation: z.number().int().min(1).max(20).optional(),
    heldOutFraction: z.number().min(0).max(0.9).optional(),
  }),
  run: async (input, ctx) => {
    await requireOwnResource(ctx, 'run', input.runId);
    const plan = currentPlan(ctx);
    const augmentation = input.augmentation ?? plan?.augmentation ?? 5;
    const heldOutFraction = input.heldOutFraction ?? plan?.heldOutFraction ?? 0;
    const earlier = await launchedByThisCall(ctx, 'dataset');
    let dataset;
    if (earlier) {
      // This call built it before the turn was interrupted: report that dataset again.
      dataset = await ctx.platform.getDataset(earlier.platform_id);
      await resumeLaunch(ctx, earlier);
    } else {
      const intent = { tool: 'dataset-build' as const, runId: input.runId, augmentation, heldOutFraction };
      const decision = await authorizeLaunch(ctx, intent, { credits: 0, availableCredits: 0 }, { toolUseId: ctx.toolUseId ?? 'call' });
      if (!decision.allowed) return refusalResult(decision);
      dataset = await ctx.platform.buildDataset(
        { runId: input.runId, augmentation, heldOutFraction, seed: 7 },
        decision.idempotencyKey,
      );
      await recordLaunch(ctx, {
        kind: 'dataset',
        platformId: dataset.id,
        planStep: decision.planStep,
        status: dataset.status,
        priceEstimate: 0,
        webUrl: null,
        details: { runId: dataset.runId, trained: dataset.trainedQuestionIds.length, heldOut: dataset.heldOutQuestionIds.length },
        stepChange: { datasetId: dataset.id },
      });
    }
    return {
      content: `Dataset ${dataset.id} built from run ${dataset.runId}: ${dataset.failedQuestionCount} failed questions, ${dataset.trainedQuestionIds.length} trained on, ${dataset.heldOutQuestionIds.length} held out, augmentation x${dataset.augmentation} -> ${dataset.exampleCount} examples, ${dataset.tokenCount} tokens.`,
    };
  },
});
