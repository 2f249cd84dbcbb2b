// offer-next-steps: buttons for the natural next steps, each authorizing exactly its action.
import { z } from 'zod';
import { nextStepLabel } from '../next-steps.js';
import type { NextAction } from '../reply.js';
import { defineTool } from './tool.js';

const Step = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('train_on_failures'),
    runId: z.string(),
    modelId: z.string().describe('The model that made the run (the one to train)'),
    heldOutFraction: z.number().min(0).max(0.9).default(0),
    augmentation: z.number().int().min(1).max(20).default(5),
  }),
  z.object({ action: z.literal('run_benchmark'), benchmarkId: z.string(), modelId: z.string() }),
  z.object({ action: z.literal('compare'), beforeRunId: z.string(), afterRunId: z.string() }),
]);

export const offerNextSteps = defineTool({
  name: 'offer-next-steps',
  description:
    'Attach buttons for up to three next steps to your message, for when there is no agreed plan. Pressing one continues this thread as if the person had asked for that step, and authorizes exactly that action.',
  input: z.object({ steps: z.array(Step).min(1).max(3) }),
  run: async ({ steps }) => {
    const options = steps.map((step) => ({ label: nextStepLabel(step as NextAction), grant: { kind: 'next' as const, action: step as NextAction } }));
    return { content: `Attached ${options.length} next-step button(s).`, parts: [{ kind: 'choices', options }] };
  },
});
