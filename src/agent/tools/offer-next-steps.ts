// offer-next-steps: buttons for the natural next steps, each authorizing exactly its action.
import { z } from 'zod';
import { ACTION_IDS, indexedActionId } from '../../slack/action-ids.js';
import { truncate } from '../../slack/limits.js';
import type { NextAction } from '../spend-guard.js';
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

const LABELS: Record<NextAction['action'], (a: NextAction) => string> = {
  train_on_failures: (a) => `Train on failures of ${(a as { runId: string }).runId}`,
  run_benchmark: (a) => `Run ${(a as { benchmarkId: string }).benchmarkId} on ${(a as { modelId: string }).modelId.split('/').pop()}`,
  compare: () => 'Compare the runs',
  keep_model: () => 'Keep this model',
};

export const offerNextSteps = defineTool({
  name: 'offer-next-steps',
  description:
    'Attach buttons for up to three next steps to your message, for when there is no agreed plan. Pressing one continues this thread as if the person had asked for that step, and authorizes exactly that action.',
  input: z.object({ steps: z.array(Step).min(1).max(3) }),
  run: async ({ steps }) => {
    const elements = steps.map((step, i) => ({
      type: 'button',
      text: { type: 'plain_text', text: truncate(LABELS[step.action](step as NextAction), 75) },
      action_id: indexedActionId(ACTION_IDS.nextStep, i),
      value: JSON.stringify({ kind: 'next', action: step }),
    }));
    return { content: `Attached ${elements.length} next-step button(s).`, attachments: [{ type: 'actions', elements }] };
  },
});
