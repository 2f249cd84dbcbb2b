// The spend policy: a pure function from the facts of a launch to allowed (with its idempotency key) or refused.
import { failure, type Failure, type FailureCode } from '../errors.js';
import type { SpendingFigures } from '../store/spending.js';
import { baselineRunId, findStep, nextStep, type Plan, type PlanStepKind } from './plan.js';
import type { ButtonGrant, LaunchIntent, NextAction } from './reply.js';

/** What the policy decided: allowed (with the plan step it is and its idempotency key), or refused and why. */
export type GuardDecision =
  | { allowed: true; planStep: PlanStepKind | null; idempotencyKey: string }
  | { allowed: false; code: FailureCode; reason: string; approval?: { intent: LaunchIntent; credits: number } };

/**
 * What the trigger of the turn can authorize: `plan` (a platform event or the sweep: only the next
 * step of the agreed plan), `button` (exactly what the pressed button stands for), `person` (what
 * the person who wrote asks, if they may spend in the thread).
 */
export type SpendAuthority = 'plan' | 'button' | 'person';

export interface SpendingCaps {
  personCap: number;
  workspaceCap: number;
  capPeriodDays: number;
}

export interface SpendLimits extends SpendingCaps {
  confirmThreshold: number;
  chatBudget: number;
}

/** Everything the policy looks at; gathered by the spend guard, never read by the policy itself. */
export interface LaunchFacts {
  intent: LaunchIntent;
  price: { credits: number; availableCredits: number };
  authority: SpendAuthority;
  chatId: string;
  triggerId: string;
  toolUseId: string;
  /** For a training launch: the run its dataset was built from. */
  datasetRunId?: string;
  plan: Plan | undefined;
  /** A person closed the thread's plan with a decision (keep a model). */
  closedByDecision: boolean;
  ownerUserId: string;
  /** The person behind the trigger is the thread's owner or an admin. */
  actorMayApprove: boolean;
  /** The grant stored with the button pressed (authority `button`). */
  grant: ButtonGrant | undefined;
  limits: SpendLimits;
  /** Spent so far by this thread, and in the cap period by its owner and the workspace; read only for a paid launch. */
  spent: { chat: number; period: SpendingFigures };
}

type Refused = Extract<GuardDecision, { allowed: false }>;

function refuse<C extends FailureCode>(f: Failure<C>, approval?: Refused['approval']): Refused {
  return { allowed: false, code: f.code, reason: f.message, ...(approval ? { approval } : {}) };
}

/** Which cap, if any, a launch of `credits` would pass, given what was spent in the period. */
export function capExceeded(
  spent: SpendingFigures,
  credits: number,
  caps: SpendingCaps,
): { scope: 'person' | 'workspace'; spent: number; cap: number } | undefined {
  const over = (already: number, cap: number) => credits > 0 && already + credits > cap + 1e-9;
  if (over(spent.person, caps.personCap)) return { scope: 'person', spent: spent.person, cap: caps.personCap };
  if (over(spent.workspace, caps.workspaceCap)) return { scope: 'workspace', spent: spent.workspace, cap: caps.workspaceCap };
  return undefined;
}

function normalizeIntent(intent: LaunchIntent): LaunchIntent {
  switch (intent.tool) {
    case 'benchmark-launch':
      return { tool: intent.tool, benchmarkId: intent.benchmarkId, modelId: intent.modelId };
    case 'dataset-build':
      return { tool: intent.tool, runId: intent.runId, augmentation: intent.augmentation, heldOutFraction: intent.heldOutFraction };
    case 'training-launch':
      return { tool: intent.tool, datasetId: intent.datasetId, baseModelId: intent.baseModelId };
  }
}

export function sameIntent(a: LaunchIntent, b: LaunchIntent): boolean {
  return JSON.stringify(normalizeIntent(a)) === JSON.stringify(normalizeIntent(b));
}

/** Which plan step, if any, this launch is. */
export function matchPlanStep(plan: Plan, intent: LaunchIntent): PlanStepKind | undefined {
  switch (intent.tool) {
    case 'benchmark-launch': {
      if (intent.benchmarkId !== plan.benchmarkId) return undefined;
      if (intent.modelId === plan.baseModelId && findStep(plan, 'baseline_run')) return 'baseline_run';
      if (plan.trainedModelId && intent.modelId === plan.trainedModelId && findStep(plan, 'trained_run')) return 'trained_run';
      return undefined;
    }
    case 'dataset-build':
      return findStep(plan, 'train') && intent.runId === baselineRunId(plan) ? 'train' : undefined;
    case 'training-launch': {
      const train = findStep(plan, 'train');
      return train && train.datasetId === intent.datasetId && intent.baseModelId === plan.baseModelId ? 'train' : undefined;
    }
  }
}

/** Does a next-step button cover this launch? */
export function actionCovers(action: NextAction, intent: LaunchIntent, datasetRunId: string | undefined): boolean {
  switch (action.action) {
    case 'run_benchmark':
      return intent.tool === 'benchmark-launch' && intent.benchmarkId === action.benchmarkId && intent.modelId === action.modelId;
    case 'train_on_failures':
      if (intent.tool === 'dataset-build') {
        return intent.runId === action.runId && intent.heldOutFraction === action.heldOutFraction;
      }
      return intent.tool === 'training-launch' && intent.baseModelId === action.modelId && datasetRunId === action.runId;
    default:
      return false;
  }
}

/**
 * Who may launch: the authority's rule. Returns a refusal, or whether a button approved this very
 * launch (an approval stands in for the threshold, budget and caps; never for the balance).
 */
function checkAuthority(facts: LaunchFacts, planStep: PlanStepKind | undefined): Refused | { approved: boolean } {
  const { plan, intent, price } = facts;
  switch (facts.authority) {
    case 'plan': {
      if (facts.closedByDecision) return refuse(failure('spend_plan_closed'));
      const next = plan ? nextStep(plan) : undefined;
      if (!plan || !planStep || !next || next.kind !== planStep || next.status === 'failed') return refuse(failure('spend_not_plan_step'));
      return { approved: false };
    }
    case 'button': {
      if (!facts.actorMayApprove) return refuse(failure('spend_button_not_allowed'));
      const grant = facts.grant;
      if (grant?.kind === 'approve') {
        if (!sameIntent(grant.intent, intent)) return refuse(failure('spend_approval_other_launch'));
        if (price.credits > grant.credits + 0.005) {
          return refuse(failure('spend_above_approved', { credits: price.credits, approved: grant.credits }), { intent, credits: price.credits });
        }
        return { approved: true };
      }
      // A next-step button stands for exactly its action.
      if (grant?.kind === 'next' && actionCovers(grant.action, intent, facts.datasetRunId)) return { approved: false };
      return refuse(failure('spend_button_not_covering'));
    }
    case 'person':
      if (!facts.actorMayApprove) return refuse(failure('spend_not_owner', { ownerUserId: facts.ownerUserId }));
      return { approved: false };
  }
}

/**
 * The idempotency key of a launch: a plan step's launch is keyed by chat, step and attempt (every
 * trigger that tries it names the same launch); a button's by its click; anything else by the
 * tool call.
 */
function idempotencyKey(facts: LaunchFacts, planStep: PlanStepKind | undefined): string {
  const step = facts.plan && planStep ? findStep(facts.plan, planStep) : undefined;
  if (step) return `chat-${facts.chatId}-${planStep}-${step.attempt}${facts.intent.tool === 'dataset-build' ? '-dataset' : ''}`;
  if (facts.authority === 'button') return `chat-${facts.chatId}-button-${facts.triggerId}-${facts.intent.tool}`;
  return `chat-${facts.chatId}-${facts.triggerId}-${facts.toolUseId}`;
}

/**
 * Decides a launch. A turn woken by a platform event or the sweep may launch only the plan's next
 * step; a button authorizes exactly its action; a person's own message may launch what they asked
 * for if they may spend in this chat. Above the available balance, or (unless a button approved
 * this launch) above the confirmation threshold, the chat's budget or a spending cap, nothing is
 * launched and the decision carries what to approve.
 */
export function decideLaunch(facts: LaunchFacts): GuardDecision {
  const { intent, price, limits } = facts;
  const planStep = facts.plan ? matchPlanStep(facts.plan, intent) : undefined;
  const authority = checkAuthority(facts, planStep);
  if ('allowed' in authority) return authority;
  const allowed: GuardDecision = { allowed: true, planStep: planStep ?? null, idempotencyKey: idempotencyKey(facts, planStep) };
  if (price.credits <= 0) return allowed;

  const approval = { intent, credits: price.credits };
  if (price.credits > price.availableCredits) {
    return refuse(failure('spend_over_balance', { credits: price.credits, available: price.availableCredits }), approval);
  }
  if (authority.approved) return allowed;
  if (price.credits > limits.confirmThreshold) {
    return refuse(failure('spend_over_threshold', { credits: price.credits, threshold: limits.confirmThreshold }), approval);
  }
  if (facts.spent.chat + price.credits > limits.chatBudget) {
    return refuse(failure('spend_over_budget', { spent: facts.spent.chat, credits: price.credits, budget: limits.chatBudget }), approval);
  }
  const over = capExceeded(facts.spent.period, price.credits, limits);
  if (over) {
    return refuse(
      failure('spend_over_cap', { ...over, ownerUserId: facts.ownerUserId, days: limits.capPeriodDays, credits: price.credits }),
      approval,
    );
  }
  return allowed;
}
