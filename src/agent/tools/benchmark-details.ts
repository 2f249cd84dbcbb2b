// benchmark-details: a benchmark's name, size, categories, scoring and price; unknown ids list the others.
import { z } from 'zod';
import { isPlatformError } from '../../platform/errors.js';
import { ACTION_IDS, indexedActionId } from '../../slack/action-ids.js';
import { defineTool } from './tool.js';

export const benchmarkDetails = defineTool({
  name: 'benchmark-details',
  description: 'Read a benchmark: name, number of questions, categories, scoring (exact match or graded) and price per run.',
  input: z.object({ benchmarkId: z.string().min(1) }),
  run: async ({ benchmarkId }, ctx) => {
    try {
      const b = await ctx.platform.getBenchmark(benchmarkId);
      return {
        content: JSON.stringify({
          id: b.id,
          name: b.name,
          questions: b.questionCount,
          scoring: b.scoring,
          categories: b.categories.map((c) => `${c.name} (${c.questionCount})`),
          pricing: b.pricing,
        }),
      };
    } catch (error) {
      if (!isPlatformError(error) || error.code !== 'not_found') throw error;
      const all = await ctx.platform.listBenchmarks();
      const buttons = all.slice(0, 5).map((b, i) => ({
        type: 'button',
        text: { type: 'plain_text', text: `${b.id}: ${b.name}`.slice(0, 70) },
        action_id: indexedActionId(ACTION_IDS.pickOption, i),
        value: JSON.stringify({ kind: 'pick', text: `Use benchmark ${b.id} (${b.name})` }),
      }));
      return {
        content: `Benchmark ${benchmarkId} does not exist. Available: ${all.map((b) => `${b.id} ${b.name} (${b.questionCount} questions)`).join('; ')}. They are offered as buttons; ask which one.`,
        isError: true,
        attachments: buttons.length ? [{ type: 'actions', elements: buttons }] : [],
      };
    }
  },
});
