// Completing due work: every run and training whose time has come, then the trainer supervisor's tick.
import type { SandboxContext } from './context.js';
import { dueRunIds } from './store/runs.js';
import { dueTrainingIds } from './store/trainings.js';
import { advanceRun } from './runs.js';
import { advanceTraining } from './trainings.js';

/** Starts and finishes every run and training that is due, one transaction each. */
export async function processDueWork(ctx: SandboxContext): Promise<void> {
  const now = ctx.now();
  for (const id of await dueRunIds(ctx.pool, now)) await advanceRun(ctx, id, now);
  for (const id of await dueTrainingIds(ctx.pool, now)) await advanceTraining(ctx, id, now);
  await ctx.training?.supervisor.tick();
}
