// benchmark-details: a benchmark's name, size, categories, scoring and price; unknown ids list the others.
import { z } from 'zod';
import { priceTiers } from '@verdict/contract/contract';
import { isPlatformError } from '@verdict/contract/errors';
import type { BenchmarkPricing } from '@verdict/contract/platform';
import { defineTool } from './tool.js';

/** "4 credits per run", or the size tiers as the platform charges them: "up to 1B parameters 4 credits; larger models 12 credits". */
export function describePricing(pricing: BenchmarkPricing): string {
  const tiers = pricing.type === 'flat' ? [{ maxParams: null, credits: pricing.credits }] : priceTiers(pricing);
  if (tiers.length === 1) return `${tiers[0]!.credits} credits per run`;
  const size = (params: number) => (params >= 1e9 ? `${+(params / 1e9).toFixed(1)}B` : `${+(params / 1e6).toFixed(0)}M`);
  return `per run: ${tiers.map((t) => `${t.maxParams === null ? 'larger models' : `up to ${size(t.maxParams)} parameters`} ${t.credits} credits`).join('; ')}`;
}

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
          scoring: b.scoring === 'graded' ? 'graded, 0 to 1 per question' : 'exact match (right or wrong)',
          categories: b.categories.map((c) => `${c.name} (${c.questionCount})`),
          price: describePricing(b.pricing),
        }),
      };
    } catch (error) {
      if (!isPlatformError(error) || error.code !== 'not_found') throw error;
      const all = await ctx.platform.listBenchmarks();
      const options = all.slice(0, 5).map((b) => ({ label: `${b.id}: ${b.name}`, grant: { kind: 'pick' as const, text: `Use benchmark ${b.id} (${b.name})` } }));
      return {
        content: `Benchmark ${benchmarkId} does not exist. Available: ${all.map((b) => `${b.id} ${b.name} (${b.questionCount} questions)`).join('; ')}. They are offered as buttons; ask which one.`,
        isError: true,
        parts: options.length ? [{ kind: 'choices', options }] : [],
      };
    }
  },
});
