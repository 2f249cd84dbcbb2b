// Every failure a person reads: its code, its words, and the place in Slack where they read it.

/**
 * Where a person reads a failure:
 * - `ephemeral`: only the person who acted sees it, in the thread ("only visible to you");
 * - `thread`: the bot posts it in the thread, mentioning the person who asked;
 * - `agent`: it goes back to the model as an `is_error` tool result, and the agent's reply in the
 *   thread tells the person what happened and what they can do (an Approve button, say).
 */
export type FailurePlace = 'ephemeral' | 'thread' | 'agent';

interface FailureSpec<Facts> {
  where: FailurePlace;
  message(facts: Facts): string;
}

function spec<Facts = void>(where: FailurePlace, message: (facts: Facts) => string): FailureSpec<Facts> {
  return { where, message };
}

/** The catalogue. Codes are stable (logs and tests use them); messages are in the user's words. */
export const FAILURES = {
  // A click on a button that spends credits, by someone who may not spend in the thread.
  button_not_allowed: spec<{ ownerUserId: string }>(
    'ephemeral',
    ({ ownerUserId }) => `Only <@${ownerUserId}>, who started this thread, or an admin can use these buttons: they spend credits. Nothing was changed.`,
  ),

  // The spend guard's refusals of a launch.
  spend_plan_closed: spec(
    'agent',
    () => "Refused by the spend guard: the person closed this thread's plan with a decision; nothing more is launched here without their new request.",
  ),
  spend_not_plan_step: spec(
    'agent',
    () =>
      'Refused by the spend guard: a turn woken by a platform event may only launch the next step of the plan the person agreed to, and this launch is not that step. Report the result and offer the next step as buttons instead.',
  ),
  spend_button_not_allowed: spec('agent', () => 'Refused by the spend guard: the person who pressed the button may not spend in this chat.'),
  spend_approval_other_launch: spec('agent', () => 'Refused by the spend guard: the approval button covers a different launch.'),
  spend_above_approved: spec<{ credits: number; approved: number }>(
    'agent',
    ({ credits, approved }) => `Refused by the spend guard: the price (${credits} credits) is above what was approved (${approved}).`,
  ),
  spend_button_not_covering: spec('agent', () => 'Refused by the spend guard: the button pressed does not authorize this launch.'),
  spend_not_owner: spec<{ ownerUserId: string }>(
    'agent',
    ({ ownerUserId }) => `Refused by the spend guard: only <@${ownerUserId}>, who started this thread, or an admin can spend credits here.`,
  ),
  spend_over_balance: spec<{ credits: number; available: number }>(
    'agent',
    ({ credits, available }) => `Not launched: it costs ${credits} credits and only ${available} are available. Top up the account, then press Approve.`,
  ),
  spend_over_threshold: spec<{ credits: number; threshold: number }>(
    'agent',
    ({ credits, threshold }) => `Not launched: ${credits} credits is above the confirmation threshold of ${threshold} credits. The person must press Approve.`,
  ),
  spend_over_budget: spec<{ spent: number; credits: number; budget: number }>(
    'agent',
    ({ spent, credits, budget }) =>
      `Not launched: this thread has spent ${spent.toFixed(2)} credits and this launch (${credits}) would pass its budget of ${budget}. The person must press Approve.`,
  ),
  spend_over_cap: spec<{ scope: 'person' | 'workspace'; ownerUserId: string; spent: number; cap: number; days: number; credits: number }>(
    'agent',
    ({ scope, ownerUserId, spent, cap, days, credits }) =>
      `Not launched: ${scope === 'person' ? `<@${ownerUserId}> has` : 'this workspace has'} spent ${spent.toFixed(2)} of ${scope === 'person' ? 'their' : 'its'} ${cap}-credit cap for the last ${days} days, and this launch (${credits}) would pass it. The person must press Approve.`,
  ),

  // The plan.
  plan_not_from_message: spec('agent', () => "A plan can only be set from a person's own message, not from a platform event or a button."),
  plan_not_owner: spec<{ ownerUserId: string }>(
    'agent',
    ({ ownerUserId }) => `Only <@${ownerUserId}>, who started this thread, or an admin can set a plan here.`,
  ),
  plan_running: spec('agent', () => 'A plan is already running in this thread; wait for its current step to finish.'),

  // The tool loop.
  tool_unknown: spec<{ name: string }>('agent', ({ name }) => `Unknown tool "${name}".`),
  tool_invalid_input: spec<{ name: string; detail: string }>('agent', ({ name, detail }) => `Invalid input for ${name}: ${detail}`.trim()),
  resource_not_found: spec<{ kind: string; id: string }>('agent', ({ kind, id }) => `No ${kind} ${id} was found.`),
} as const;

export type FailureCode = keyof typeof FAILURES;
type FactsOf<C extends FailureCode> = Parameters<(typeof FAILURES)[C]['message']>[0];

export interface Failure<C extends FailureCode = FailureCode> {
  code: C;
  where: FailurePlace;
  message: string;
}

/** A failure of the catalogue, with its words for these facts. */
export function failure<C extends FailureCode>(code: C, ...facts: FactsOf<C> extends void ? [] : [FactsOf<C>]): Failure<C> {
  const entry = FAILURES[code] as FailureSpec<unknown>;
  return { code, where: entry.where, message: entry.message(facts[0]) };
}
