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

  // Slack's Stop button pressed by someone who may not stop the thread.
  stop_not_allowed: spec<{ ownerUserId: string }>(
    'ephemeral',
    ({ ownerUserId }) => `Only <@${ownerUserId}>, who started this thread, or an admin can stop it. Nothing was stopped or cancelled.`,
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
  run_not_completed: spec<{ id: string; status: string }>('agent', ({ id, status }) => `Run ${id} is ${status}, not completed.`),

  // The comparison.
  compare_not_completed: spec<{ id: string; status: string }>('agent', ({ id, status }) => `Run ${id} is ${status}; only completed runs can be compared.`),
  compare_other_benchmarks: spec<{ before: string; after: string; beforeBenchmark: string; afterBenchmark: string }>(
    'agent',
    (f) => `Runs ${f.before} and ${f.after} are on different benchmarks (${f.beforeBenchmark}, ${f.afterBenchmark}).`,
  ),

  // A benchmark file shared in the thread.
  import_not_shared: spec<{ fileId: string; known: string }>(
    'agent',
    ({ fileId, known }) => `No file ${fileId} was shared in this thread.${known ? ` Shared here: ${known}.` : ' Ask the person to share the file in this thread.'}`,
  ),
  import_too_large: spec<{ name: string; size: number | null; limit: number }>('agent', ({ name, size, limit }) =>
    size === null
      ? `The file "${name}" is over ${limit} bytes; benchmark files up to that size are imported.`
      : `The file "${name}" is ${size} bytes; benchmark files up to ${limit} bytes are imported.`,
  ),
  import_no_link: spec<{ name: string }>('agent', ({ name }) => `Slack gave no usable download link for "${name}".`),
  import_not_on_slack: spec<{ name: string; host: string }>('agent', ({ name, host }) => `The download link of "${name}" is not on Slack (${host}); it was not fetched.`),
  import_download_failed: spec<{ name: string; cause: string }>(
    'agent',
    ({ name, cause }) => `Downloading "${name}" from Slack failed: ${cause}. Ask the person to share it again.`,
  ),
  import_download_refused: spec<{ name: string; status: number }>('agent', ({ name, status }) =>
    `Could not download "${name}": ${
      status === 200
        ? 'Slack answered with its sign-in page (the app needs the files:read scope, and the file must be shared where the bot is)'
        : `Slack answered HTTP ${status}`
    }.`,
  ),
  import_not_utf8: spec<{ name: string }>('agent', ({ name }) => `The file "${name}" is not UTF-8 text; a benchmark file is JSONL text, one JSON object a line.`),
  /** The platform's own words, naming each bad line and field. */
  import_invalid: spec<{ detail: string }>('agent', ({ detail }) => detail),
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
