// Which next steps the bot offers, and how each reads: a product rule, kept apart from any rendering.
import type { Comparison } from '../analysis/index.js';
import type { ChoiceOption, NextAction } from './reply.js';

/** The button label of a next step offered without a verdict (offer-next-steps). */
export function nextStepLabel(action: NextAction): string {
  switch (action.action) {
    case 'train_on_failures':
      return `Train on failures of ${action.runId}`;
    case 'run_benchmark':
      return `Run ${action.benchmarkId} on ${action.modelId.split('/').pop()}`;
    case 'compare':
      return 'Compare the runs';
    case 'keep_model':
      return 'Keep this model';
  }
}

export interface VerdictRefs {
  benchmarkId: string;
  baseModelId: string;
  trainedModelId: string;
  beforeRunId: string;
  afterRunId: string;
  augmentation: number;
}

/**
 * Three next steps that fit the verdict, the recommended one first: a held-out retrain when
 * generalization was not measured, keeping the trained model when it improved, else keeping the base.
 */
export function nextStepsFor(comparison: Comparison, refs: VerdictRefs): Array<{ label: string; action: NextAction }> {
  const retrainHeldOut = {
    label: 'Retrain with 30% held out',
    action: { action: 'train_on_failures', runId: refs.beforeRunId, modelId: refs.baseModelId, heldOutFraction: 0.3, augmentation: refs.augmentation } as NextAction,
  };
  const trainRemaining = {
    label: 'Train again on remaining failures',
    action: { action: 'train_on_failures', runId: refs.afterRunId, modelId: refs.trainedModelId, heldOutFraction: 0, augmentation: refs.augmentation } as NextAction,
  };
  const keepBase = { label: 'Keep the base model', action: { action: 'keep_model', modelId: refs.baseModelId } as NextAction };
  const keepTrained = { label: 'Keep the trained model', action: { action: 'keep_model', modelId: refs.trainedModelId } as NextAction };
  const rerunBase = {
    label: 'Rerun base for noise floor',
    action: { action: 'run_benchmark', benchmarkId: refs.benchmarkId, modelId: refs.baseModelId } as NextAction,
  };
  const generalizationMeasured = comparison.training?.generalizationMeasured ?? true;
  if (!generalizationMeasured) return [retrainHeldOut, trainRemaining, keepBase];
  if (comparison.verdict.outcome === 'improved') return [keepTrained, trainRemaining, rerunBase];
  return [retrainHeldOut, keepBase, rerunBase];
}

/** The verdict's next steps as a choice, the first one recommended. */
export function verdictChoices(comparison: Comparison, refs: VerdictRefs): ChoiceOption[] {
  return nextStepsFor(comparison, refs).map((step, i) => ({ label: step.label, grant: { kind: 'next', action: step.action }, ...(i === 0 ? { primary: true } : {}) }));
}
