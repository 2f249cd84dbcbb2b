// benchmark-launch: starts a benchmark run on a model, after the spend guard agrees.
import { z } from 'zod';
import { priceRun } from '@verdict/contract/contract';
import { isPlatformError } from '@verdict/contract/errors';
import { authorizeLaunch } from '../spend-guard.js';
import { benchmarkDetails } from './benchmark-details.js';
import { refusalResult } from './launch-refusal.js';
import { launchedByThisCall, recordLaunch, resumeLaunch } from './launch-record.js';
import { balanceAfterLaunch, launchOutlook, sandboxNote } from './launch-report.js';
import { defineTool } from './tool.js';

export const benchmarkLaunch = defineTool({
  name: 'benchmark-launch',
  description:
    'Launch a benchmark run of a model (exact model id). Spends credits. Returns the run id, its link, the price and the balance left. Refused when it is not what the person agreed to, or above the confirmation threshold, the thread budget or the balance (then an approval button is attached).',
  input: z.object({ benchmarkId: z.string().min(1), modelId: z.string().min(1) }),
  run: async ({ benchmarkId, modelId }, ctx) => {
    let benchmark;
    try {
      benchmark = await ctx.platform.getBenchmark(benchmarkId);
    } catch (error) {
      // An unknown benchmark: list the ones that exist, as buttons, instead of a bare error.
      if (isPlatformError(error) && error.code === 'not_found') return benchmarkDetails.run({ benchmarkId }, ctx);
      throw error;
    }
    const [model, balance, earlier] = await Promise.all([
      ctx.platform.getModel(modelId),
      ctx.platform.getBalance(),
      launchedByThisCall(ctx, 'run'),
    ]);
    let run;
    let planStep: string | null;
    if (earlier) {
      // This call launched it before the turn was interrupted: report that launch again.
      run = await ctx.platform.getRun(earlier.platform_id);
      await resumeLaunch(ctx, earlier);
      planStep = earlier.plan_step;
    } else {
      const price = priceRun(benchmark.pricing, model.params);
      const decision = await authorizeLaunch(
        ctx,
        { tool: 'benchmark-launch', benchmarkId, modelId },
        { credits: price, availableCredits: balance.availableCredits },
        { toolUseId: ctx.toolUseId ?? 'call' },
      );
      if (!decision.allowed) return refusalResult(decision);
      run = await ctx.platform.launchRun({ benchmarkId, modelId }, decision.idempotencyKey);
      planStep = decision.planStep;
      await recordLaunch(ctx, {
        kind: 'run',
        platformId: run.id,
        planStep: decision.planStep,
        status: run.status,
        priceEstimate: run.priceCredits,
        webUrl: run.webUrl,
        details: { benchmarkId, modelId },
        stepChange: { status: 'launched', runId: run.id },
      });
    }
    const balanceLine = await balanceAfterLaunch(ctx);
    return {
      content: `Launched run ${run.id} of benchmark ${benchmark.id} (${benchmark.name}, ${benchmark.questionCount} questions) on ${model.id}: ${run.status}, price ${run.priceCredits} credits, link ${run.webUrl}. ${balanceLine}${sandboxNote(ctx, run.engine)}.${launchOutlook(ctx, planStep, run)}`,
    };
  },
});
