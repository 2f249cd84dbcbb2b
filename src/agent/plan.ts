// The agreed plan of a chat: the steps a person asked for, their status, and what each produced.
import { z } from 'zod';

export const PLAN_STEP_KINDS = ['baseline_run', 'train', 'trained_run', 'compare'] as const;
export type PlanStepKind = (typeof PLAN_STEP_KINDS)[number];

export const PlanStepSchema = z.object({
  kind: z.enum(PLAN_STEP_KINDS),
  status: z.enum(['pending', 'launched', 'completed', 'failed']),
  /** Bumped when a person retries a failed step, so the retry gets a fresh idempotency key. */
  attempt: z.number().int().min(1),
  runId: z.string().optional(),
  datasetId: z.string().optional(),
  trainingId: z.string().optional(),
  error: z.string().optional(),
});
export type PlanStep = z.infer<typeof PlanStepSchema>;

export const PlanSchema = z.object({
  agreedBy: z.string(),
  agreedAt: z.string(),
  benchmarkId: z.string(),
  baseModelId: z.string(),
  augmentation: z.number().int().min(1).max(20),
  heldOutFraction: z.number().min(0).max(0.9),
  trainedModelId: z.string().optional(),
  steps: z.array(PlanStepSchema).min(1),
  /** The plan-set tool call that recorded it, so that call, run again after a crash, is recognised. */
  setByToolUseId: z.string().optional(),
});
export type Plan = z.infer<typeof PlanSchema>;

export function parsePlan(raw: unknown): Plan | undefined {
  if (raw === null || raw === undefined) return undefined;
  const parsed = PlanSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

/** The first step not yet completed, or undefined when the plan is done. */
export function nextStep(plan: Plan): PlanStep | undefined {
  return plan.steps.find((step) => step.status !== 'completed');
}

export function findStep(plan: Plan, kind: PlanStepKind): PlanStep | undefined {
  return plan.steps.find((step) => step.kind === kind);
}

/** A copy of the plan with one step changed. */
export function updateStep(plan: Plan, kind: PlanStepKind, change: Partial<PlanStep>): Plan {
  return { ...plan, steps: plan.steps.map((step) => (step.kind === kind ? { ...step, ...change } : step)) };
}

/** The run the comparison treats as "before": the plan's baseline run. */
export function baselineRunId(plan: Plan): string | undefined {
  return findStep(plan, 'baseline_run')?.runId;
}

export function describePlan(plan: Plan): string {
  const labels: Record<PlanStepKind, string> = {
    baseline_run: `run benchmark ${plan.benchmarkId} on ${plan.baseModelId}`,
    train: `train on the failed questions (augmentation ${plan.augmentation}${plan.heldOutFraction > 0 ? `, ${Math.round(plan.heldOutFraction * 100)}% of failures held out` : ''})`,
    trained_run: `run benchmark ${plan.benchmarkId} on the trained model${plan.trainedModelId ? ` ${plan.trainedModelId}` : ''}`,
    compare: 'compare the two runs and give the verdict',
  };
  return plan.steps.map((step, i) => `${i + 1}. ${labels[step.kind]} [${step.status}]`).join('\n');
}
