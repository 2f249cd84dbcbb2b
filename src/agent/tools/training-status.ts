// training-status: a LoRA training job's status, progress, price and produced model.
import { z } from 'zod';
import type { TrainingJob } from '@verdict/contract/platform';
import { requireOwnResource } from './own-resource.js';
import { defineTool } from './tool.js';

export const trainingStatus = defineTool({
  name: 'training-status',
  description: 'Read a LoRA training job: status, progress, price estimated and charged, the produced model id when done, link.',
  input: z.object({ trainingId: z.string().min(1) }),
  run: async ({ trainingId }, ctx) => {
    await requireOwnResource(ctx, 'training', trainingId);
    const t = await ctx.platform.getTraining(trainingId);
    return { content: describeTraining(t) };
  },
});

export function describeTraining(t: TrainingJob): string {
  return [
    `Training ${t.id} of ${t.baseModelId} on dataset ${t.datasetId}: ${t.status}`,
    `progress ${Math.round(t.progress * 100)}%`,
    t.priceChargedCredits !== null ? `charged ${t.priceChargedCredits} credits` : `estimated ${t.priceEstimatedCredits} credits`,
    t.producedModelId ? `produced model ${t.producedModelId}` : undefined,
    t.errorMessage ? `error: ${t.errorMessage}` : undefined,
    `link ${t.webUrl}`,
  ]
    .filter(Boolean)
    .join('; ');
}
