// The agreed plan as the person watches it: the loop's five visible steps (benchmark, training set,
// training, benchmark again, verdict), each with its status, its progress and its estimated finish.
// Pure: the facts (the chat's plan, what the platform says of the running resources) come in, the
// view goes out; src/jobs/plan-progress.ts gathers the facts and src/slack/blocks/plan.ts draws it.
import type { Plan, PlanStep } from './plan.js';

/** The four states Slack's task cards know; everything the loop does maps onto them. */
export type PlanStepStatus = 'pending' | 'in_progress' | 'complete' | 'error';

export const PLAN_VIEW_STEP_IDS = ['baseline_run', 'dataset', 'training', 'trained_run', 'verdict'] as const;
export type PlanViewStepId = (typeof PLAN_VIEW_STEP_IDS)[number];

/** What the platform says now of a run or a training the plan launched (read while it runs). */
export interface LiveResource {
  status: string;
  /** Questions answered out of all (runs). */
  questions?: { done: number; total: number } | null;
  /** 0..1 (trainings). */
  fraction?: number | null;
  /** Optimizer steps done and planned (real trainers). */
  steps?: { done: number; total: number } | null;
  estimatedFinishAt?: string | null;
  webUrl?: string | null;
}

/** What the bot stored of a resource when its finish event was handled (the resources table). */
export interface StoredResource {
  status: string;
  /** A run's score, 0..1, as the platform reported it. */
  score?: number | null;
  /** Credits charged, as stored (numeric text). */
  priceCharged?: string | null;
  webUrl?: string | null;
}

export interface PlanProgressFacts {
  plan: Plan;
  /** The live state of the run or training of a step that is launched, by its platform id. */
  live: ReadonlyMap<string, LiveResource>;
  /** The chat's runs and trainings as stored from their events, by platform id. */
  stored?: ReadonlyMap<string, StoredResource>;
}

export interface PlanViewStep {
  id: PlanViewStepId;
  title: string;
  status: PlanStepStatus;
  /** One line under the title: progress while it runs, the result once done, the reason of an error. */
  detail?: string;
  /** Progress as numbers, for the fallback text and for tests. */
  progress?: { done: number; total: number; unit: 'questions' | 'percent' | 'steps' };
  /** When the platform expects the step to finish (ISO time), while it runs. */
  estimatedFinishAt?: string;
  url?: string;
}

export interface PlanView {
  title: string;
  steps: PlanViewStep[];
  /** True while a step is running on the platform: the plan must be polled for progress. */
  running: boolean;
  /** True once every step is complete, or one has failed: nothing will change without a person. */
  settled: boolean;
}

const FAILED_LIVE = new Set(['failed', 'cancelled']);

/**
 * Derives the view of a plan. A step the platform reports finished before its event's turn has
 * recorded it shows as finished (the turn will follow); progress is rounded to whole percents so a
 * running step changes the message only when a person would see a difference.
 */
export function derivePlanView(facts: PlanProgressFacts): PlanView {
  const { plan, live } = facts;
  const stored = facts.stored ?? new Map<string, StoredResource>();
  const step = (kind: PlanStep['kind']) => plan.steps.find((s) => s.kind === kind);
  const baseline = step('baseline_run');
  const train = step('train');
  const trained = step('trained_run');
  const compare = step('compare');

  const steps: PlanViewStep[] = [];
  if (baseline) steps.push(runStep('baseline_run', `Benchmark ${plan.benchmarkId} on ${plan.baseModelId}`, baseline, live, stored));
  if (train) {
    steps.push(datasetStep(train, plan, baseline));
    steps.push(trainingStep(train, live, stored));
  }
  if (trained) {
    const model = plan.trainedModelId ?? 'the trained model';
    steps.push(runStep('trained_run', `Benchmark ${plan.benchmarkId} again on ${model}`, trained, live, stored));
  }
  if (compare) steps.push(verdictStep(compare, trained));

  const running = steps.some((s) => s.status === 'in_progress' && s.id !== 'verdict' && s.id !== 'dataset');
  const settled = steps.every((s) => s.status === 'complete') || steps.some((s) => s.status === 'error');
  return { title: planTitle(steps), steps, running, settled };
}

function planTitle(steps: readonly PlanViewStep[]): string {
  const done = steps.filter((s) => s.status === 'complete').length;
  if (steps.some((s) => s.status === 'error')) return `The plan stopped: ${done} of ${steps.length} steps done`;
  if (done === steps.length) return `The plan is done: ${done} of ${steps.length} steps`;
  return `The plan: ${done} of ${steps.length} steps done`;
}

function liveOf(live: ReadonlyMap<string, LiveResource>, id: string | undefined): LiveResource | undefined {
  return id ? live.get(id) : undefined;
}

/** A launched step's status, the platform's word winning once the resource has finished. */
function launchedStatus(step: PlanStep, resource: { status: string } | undefined): PlanStepStatus {
  if (step.status === 'completed') return 'complete';
  if (step.status === 'failed') return 'error';
  if (step.status === 'pending') return 'pending';
  if (resource?.status === 'completed') return 'complete';
  if (resource && FAILED_LIVE.has(resource.status)) return 'error';
  return 'in_progress';
}

function charged(record: StoredResource | undefined): string {
  const credits = record?.priceCharged !== undefined && record?.priceCharged !== null ? Number(record.priceCharged) : NaN;
  return Number.isFinite(credits) ? `, ${credits.toFixed(2)} credits` : '';
}

function runStep(
  id: 'baseline_run' | 'trained_run',
  title: string,
  step: PlanStep,
  live: ReadonlyMap<string, LiveResource>,
  stored: ReadonlyMap<string, StoredResource>,
): PlanViewStep {
  const resource = liveOf(live, step.runId);
  const record = step.runId ? stored.get(step.runId) : undefined;
  const status = launchedStatus(step, resource ?? record);
  const url = resource?.webUrl ?? record?.webUrl;
  const view: PlanViewStep = { id, title, status, ...(url ? { url } : {}) };
  const questions = resource?.questions;
  if (status === 'in_progress') {
    if (questions && questions.total > 0) {
      view.progress = { done: questions.done, total: questions.total, unit: 'questions' };
      view.detail = `${questions.done} of ${questions.total} questions scored`;
    } else view.detail = resource?.status === 'queued' ? 'queued on the platform' : 'running';
    if (resource?.estimatedFinishAt) view.estimatedFinishAt = resource.estimatedFinishAt;
  } else if (status === 'complete') {
    const score = typeof record?.score === 'number' ? `score ${(record.score * 100).toFixed(1)}%` : 'scored';
    view.detail = `${score}${charged(record)}`;
  } else if (status === 'error') {
    view.detail = step.error ?? `the run ${resource?.status ?? record?.status ?? 'failed'}`;
  }
  return view;
}

function datasetStep(train: PlanStep, plan: Plan, baseline: PlanStep | undefined): PlanViewStep {
  const title = `Build a training set from the failed questions (×${plan.augmentation})`;
  if (train.datasetId) return { id: 'dataset', title, status: 'complete', detail: `dataset ${train.datasetId}` };
  if (train.status === 'failed') return { id: 'dataset', title, status: 'error', detail: train.error ?? 'failed' };
  // The turn woken by the baseline's finish builds it next.
  if (baseline?.status === 'completed') return { id: 'dataset', title, status: 'in_progress', detail: 'building' };
  return { id: 'dataset', title, status: 'pending' };
}

function trainingStep(train: PlanStep, live: ReadonlyMap<string, LiveResource>, stored: ReadonlyMap<string, StoredResource>): PlanViewStep {
  const title = 'Train a LoRA adapter on them';
  if (!train.trainingId) {
    // A failure before any training was launched belongs to the training set's step.
    return { id: 'training', title, status: 'pending' };
  }
  const resource = liveOf(live, train.trainingId);
  const record = stored.get(train.trainingId);
  const status = launchedStatus(train, resource ?? record);
  const url = resource?.webUrl ?? record?.webUrl;
  const view: PlanViewStep = { id: 'training', title, status, ...(url ? { url } : {}) };
  if (status === 'in_progress') {
    if (resource?.steps && resource.steps.total > 0) {
      view.progress = { done: resource.steps.done, total: resource.steps.total, unit: 'steps' };
      view.detail = `${Math.floor((100 * resource.steps.done) / resource.steps.total)}% trained (step ${resource.steps.done} of ${resource.steps.total})`;
    } else if (typeof resource?.fraction === 'number') {
      const percent = Math.floor(resource.fraction * 100);
      view.progress = { done: percent, total: 100, unit: 'percent' };
      view.detail = `${percent}% trained`;
    } else view.detail = resource?.status === 'queued' ? 'queued on the platform' : 'training';
    if (resource?.estimatedFinishAt) view.estimatedFinishAt = resource.estimatedFinishAt;
  } else if (status === 'complete') view.detail = `trained${charged(record)}`;
  else if (status === 'error') view.detail = train.error ?? `the training ${resource?.status ?? record?.status ?? 'failed'}`;
  return view;
}

function verdictStep(compare: PlanStep, trained: PlanStep | undefined): PlanViewStep {
  const title = 'Compare the two runs and give the verdict';
  if (compare.status === 'completed') return { id: 'verdict', title, status: 'complete', detail: 'posted in this thread' };
  if (compare.status === 'failed') return { id: 'verdict', title, status: 'error', detail: compare.error ?? 'failed' };
  if (trained?.status === 'completed') return { id: 'verdict', title, status: 'in_progress', detail: 'comparing' };
  return { id: 'verdict', title, status: 'pending' };
}

/** The platform ids of the plan's launched runs and trainings that are not recorded finished yet: what to read live. */
export function resourcesToWatch(plan: Plan): Array<{ kind: 'run' | 'training'; id: string }> {
  const out: Array<{ kind: 'run' | 'training'; id: string }> = [];
  for (const step of plan.steps) {
    if (step.status !== 'launched') continue;
    if ((step.kind === 'baseline_run' || step.kind === 'trained_run') && step.runId) out.push({ kind: 'run', id: step.runId });
    if (step.kind === 'train' && step.trainingId) out.push({ kind: 'training', id: step.trainingId });
  }
  return out;
}

/**
 * How long until a running plan is worth reading again: about when its progress moves by a percent
 * (a hundredth of the time left to the earliest estimated finish), never sooner than `minMs` and
 * never later than `maxMs`. An hours-long training is then read every minute, not every few seconds.
 */
export function pollIntervalMs(view: PlanView, nowMs: number, minMs: number, maxMs: number): number {
  const finishes = view.steps
    .filter((s) => s.status === 'in_progress' && s.estimatedFinishAt)
    .map((s) => Date.parse(s.estimatedFinishAt!))
    .filter((t) => Number.isFinite(t));
  if (finishes.length === 0) return minMs;
  const left = Math.min(...finishes) - nowMs;
  return Math.min(maxMs, Math.max(minMs, Math.floor(left / 100)));
}
