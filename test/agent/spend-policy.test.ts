// The spend policy as a pure function: every rule (plan step, button grant, owner/admin, balance, threshold, budget, caps) without Postgres.
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/agent/plan.js';
import type { LaunchIntent } from '../../src/agent/spend-guard.js';
import { decideLaunch, type LaunchFacts } from '../../src/agent/spend-policy.js';

const plan: Plan = {
  agreedBy: 'UOWNER',
  agreedAt: '2026-12-04T10:00:00.000Z',
  benchmarkId: '104',
  baseModelId: 'base',
  augmentation: 5,
  heldOutFraction: 0,
  trainedModelId: 'ft',
  steps: [
    { kind: 'baseline_run', status: 'completed', attempt: 1, runId: 'run_1' },
    { kind: 'train', status: 'pending', attempt: 2, datasetId: 'ds_1' },
    { kind: 'trained_run', status: 'pending', attempt: 1 },
    { kind: 'compare', status: 'pending', attempt: 1 },
  ],
};

const trainJob: LaunchIntent = { tool: 'training-launch', datasetId: 'ds_1', baseModelId: 'base' };
const build: LaunchIntent = { tool: 'dataset-build', runId: 'run_1', augmentation: 5, heldOutFraction: 0 };
const rogue: LaunchIntent = { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'other' };

function facts(over: Partial<LaunchFacts> = {}): LaunchFacts {
  return {
    intent: rogue,
    price: { credits: 10, availableCredits: 500 },
    authority: 'person',
    chatId: '7',
    triggerId: '42',
    toolUseId: 'toolu_1',
    plan: undefined,
    closedByDecision: false,
    ownerUserId: 'UOWNER',
    actorMayApprove: true,
    grant: undefined,
    limits: { confirmThreshold: 50, chatBudget: 100, personCap: 200, workspaceCap: 400, capPeriodDays: 7 },
    spent: { chat: 0, period: { person: 0, workspace: 0 } },
    ...over,
  };
}

describe('spend policy: who may launch', () => {
  it('lets a platform event launch only the next step of the plan, keyed by chat, step and attempt', () => {
    expect(decideLaunch(facts({ authority: 'plan', plan, intent: trainJob }))).toEqual({ allowed: true, planStep: 'train', idempotencyKey: 'chat-7-train-2' });
    expect(decideLaunch(facts({ authority: 'plan', plan, intent: build }))).toMatchObject({ allowed: true, idempotencyKey: 'chat-7-train-2-dataset' });
    // The trained run is a plan step, but not the next one.
    const later = decideLaunch(facts({ authority: 'plan', plan, intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'ft' } }));
    expect(later).toMatchObject({ allowed: false, code: 'spend_not_plan_step' });
    expect(decideLaunch(facts({ authority: 'plan', plan, intent: rogue }))).toMatchObject({ allowed: false, code: 'spend_not_plan_step' });
    expect(decideLaunch(facts({ authority: 'plan', plan: undefined, intent: trainJob }))).toMatchObject({ allowed: false, code: 'spend_not_plan_step' });
  });

  it('launches nothing automatically once a step failed or the person closed the plan', () => {
    const failed: Plan = { ...plan, steps: plan.steps.map((s) => (s.kind === 'train' ? { ...s, status: 'failed' } : s)) };
    expect(decideLaunch(facts({ authority: 'plan', plan: failed, intent: trainJob }))).toMatchObject({ allowed: false, code: 'spend_not_plan_step' });
    const closed = decideLaunch(facts({ authority: 'plan', plan, intent: trainJob, closedByDecision: true }));
    expect(closed).toMatchObject({ allowed: false, code: 'spend_plan_closed', reason: expect.stringMatching(/closed this thread's plan/) });
  });

  it("lets a person's message spend only when they own the thread or are an admin", () => {
    expect(decideLaunch(facts())).toEqual({ allowed: true, planStep: null, idempotencyKey: 'chat-7-42-toolu_1' });
    const stranger = decideLaunch(facts({ actorMayApprove: false }));
    expect(stranger).toMatchObject({ allowed: false, code: 'spend_not_owner', reason: expect.stringContaining('<@UOWNER>') });
    expect(stranger).not.toHaveProperty('approval');
  });

  it('lets an approve button launch exactly its launch, up to its price, even above the threshold and the budget', () => {
    const grant = { kind: 'approve' as const, intent: rogue, credits: 60 };
    const approved = decideLaunch(facts({ authority: 'button', grant, price: { credits: 60, availableCredits: 500 }, spent: { chat: 95, period: { person: 0, workspace: 0 } } }));
    expect(approved).toEqual({ allowed: true, planStep: null, idempotencyKey: 'chat-7-button-42-benchmark-launch' });
    expect(decideLaunch(facts({ authority: 'button', grant, intent: { ...rogue, modelId: 'base' } }))).toMatchObject({ allowed: false, code: 'spend_approval_other_launch' });
    const dearer = decideLaunch(facts({ authority: 'button', grant, price: { credits: 61, availableCredits: 500 } }));
    expect(dearer).toMatchObject({ allowed: false, code: 'spend_above_approved', approval: { intent: rogue, credits: 61 } });
    expect(decideLaunch(facts({ authority: 'button', grant, actorMayApprove: false }))).toMatchObject({ allowed: false, code: 'spend_button_not_allowed' });
    // An approval never stands in for credits the account does not have.
    const broke = decideLaunch(facts({ authority: 'button', grant, price: { credits: 60, availableCredits: 59 } }));
    expect(broke).toMatchObject({ allowed: false, code: 'spend_over_balance', approval: { intent: rogue, credits: 60 } });
  });

  it('lets a next-step button launch its action and nothing else', () => {
    const grant = { kind: 'next' as const, action: { action: 'train_on_failures' as const, runId: 'run_9', modelId: 'base', heldOutFraction: 0.3, augmentation: 5 } };
    const ownBuild: LaunchIntent = { tool: 'dataset-build', runId: 'run_9', augmentation: 5, heldOutFraction: 0.3 };
    expect(decideLaunch(facts({ authority: 'button', grant, intent: ownBuild, price: { credits: 0, availableCredits: 0 } }))).toMatchObject({ allowed: true });
    const job: LaunchIntent = { tool: 'training-launch', datasetId: 'ds_9', baseModelId: 'base' };
    expect(decideLaunch(facts({ authority: 'button', grant, intent: job, datasetRunId: 'run_9' }))).toMatchObject({ allowed: true });
    expect(decideLaunch(facts({ authority: 'button', grant, intent: job, datasetRunId: 'run_8' }))).toMatchObject({ allowed: false, code: 'spend_button_not_covering' });
    expect(decideLaunch(facts({ authority: 'button', grant, intent: rogue }))).toMatchObject({ allowed: false, code: 'spend_button_not_covering' });
    expect(decideLaunch(facts({ authority: 'button', grant: undefined }))).toMatchObject({ allowed: false, code: 'spend_button_not_covering' });
  });
});

describe('spend policy: how much', () => {
  it('allows a free launch whatever the balance and the budget', () => {
    const free = decideLaunch(facts({ price: { credits: 0, availableCredits: 0 }, spent: { chat: 1000, period: { person: 1000, workspace: 1000 } } }));
    expect(free).toMatchObject({ allowed: true });
  });

  it('asks for an approval above the balance, the threshold, the budget and the caps, in that order', () => {
    const overBalance = decideLaunch(facts({ price: { credits: 60, availableCredits: 5 } }));
    expect(overBalance).toMatchObject({ code: 'spend_over_balance', reason: expect.stringMatching(/only 5 are available/) });
    const overThreshold = decideLaunch(facts({ price: { credits: 60, availableCredits: 500 } }));
    expect(overThreshold).toMatchObject({ code: 'spend_over_threshold', approval: { intent: rogue, credits: 60 } });
    const overBudget = decideLaunch(facts({ price: { credits: 20, availableCredits: 500 }, spent: { chat: 85.5, period: { person: 0, workspace: 0 } } }));
    expect(overBudget).toMatchObject({ code: 'spend_over_budget', reason: expect.stringMatching(/spent 85.50 credits/) });
    const atBudget = decideLaunch(facts({ price: { credits: 20, availableCredits: 500 }, spent: { chat: 80, period: { person: 0, workspace: 0 } } }));
    expect(atBudget).toMatchObject({ allowed: true });
    const person = decideLaunch(facts({ spent: { chat: 0, period: { person: 195, workspace: 195 } } }));
    expect(person).toMatchObject({ code: 'spend_over_cap', reason: expect.stringMatching(/<@UOWNER> has spent 195.00 of their 200-credit cap for the last 7 days/) });
    const workspace = decideLaunch(facts({ spent: { chat: 0, period: { person: 0, workspace: 395 } } }));
    expect(workspace).toMatchObject({ code: 'spend_over_cap', reason: expect.stringMatching(/this workspace has spent 395.00 of its 400-credit cap/) });
  });

  it('holds a plan step to the same limits as a person', () => {
    const dear = decideLaunch(facts({ authority: 'plan', plan, intent: trainJob, price: { credits: 51, availableCredits: 500 } }));
    expect(dear).toMatchObject({ allowed: false, code: 'spend_over_threshold', approval: { intent: trainJob, credits: 51 } });
  });
});
