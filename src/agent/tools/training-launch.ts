// training-launch: estimates and launches a LoRA training job on a dataset, after the spend guard agrees.
import { z } from 'zod';
import { authorizeLaunch } from '../spend-guard.js';
import { refusalResult } from './launch-refusal.js';
import { launchedByThisCall, recordLaunch, resumeLaunch } from './launch-record.js';
import { balanceAfterLaunch, launchOutlook, sandboxNote } from './launch-report.js';
import { defineTool } from './tool.js';

export const trainingLaunch = defineTool({
  name: 'training-launch',
  description:
    'Launch a LoRA training job of a base model on a dataset from dataset-build. Spends credits. Returns the job id, link, estimated price and balance. Refused when not agreed, or above the confirmation threshold, the thread budget or the balance (then an approval button is attached).',
  input: z.object({
    datasetId: z.string().min(1),
    baseModelId: z.string().min(1),
    epochs: z.number().int().min(1).max(10).optional(),
  }),
  run: async (input, ctx) => {
    const [dataset, estimate, balance, earlier] = await Promise.all([
      ctx.platform.getDataset(input.datasetId),
      ctx.platform.estimateTraining(input),
      ctx.platform.getBalance(),
      launchedByThisCall(ctx, 'training'),
    ]);
    let job;
    let planStep: string | null;
    if (earlier) {
      // This call launched it before the turn was interrupted: report that launch again.
      job = await ctx.platform.getTraining(earlier.platform_id);
      await resumeLaunch(ctx, earlier);
      planStep = earlier.plan_step;
    } else {
      const decision = await authorizeLaunch(
        ctx,
        { tool: 'training-launch', datasetId: input.datasetId, baseModelId: input.baseModelId },
        { credits: estimate.priceCredits, availableCredits: balance.availableCredits },
        { toolUseId: ctx.toolUseId ?? 'call', datasetRunId: dataset.runId },
      );
      if (!decision.allowed) {
        const refused = refusalResult(decision);
        return {
          ...refused,
          content: `Training estimate: ${estimate.priceCredits} credits for ${estimate.trainedTokens} tokens x ${estimate.epochs} epochs; balance ${balance.availableCredits} available. ${refused.content}`,
        };
      }
      job = await ctx.platform.launchTraining(input, decision.idempotencyKey);
      planStep = decision.planStep;
      await recordLaunch(ctx, {
        kind: 'training',
        platformId: job.id,
        planStep: decision.planStep,
        status: job.status,
        priceEstimate: job.priceEstimatedCredits,
        webUrl: job.webUrl,
        details: { datasetId: job.datasetId, baseModelId: job.baseModelId, trained: dataset.trainedQuestionIds.length, heldOut: dataset.heldOutQuestionIds.length, augmentation: dataset.augmentation },
        stepChange: { status: 'launched', trainingId: job.id, datasetId: job.datasetId },
      });
    }
    const balanceLine = await balanceAfterLaunch(ctx);
    return {
      content: `Launched LoRA training ${job.id} of ${job.baseModelId} on dataset ${dataset.id} (${dataset.trainedQuestionIds.length} failed questions x${dataset.augmentation} augmentation, ${dataset.heldOutQuestionIds.length} held out): ${job.status}, estimated ${job.priceEstimatedCredits} credits, link ${job.webUrl}. ${balanceLine}${sandboxNote(ctx, job.engine)}.${launchOutlook(ctx, planStep, job)}`,
    };
  },
});
