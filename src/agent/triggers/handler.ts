// The shape of a trigger handler: who may start the turn, what it reads and writes first, what the model reads.
import type { Failure } from '../../errors.js';
import type { Db } from '../../store/db.js';
import { describePlan, type Plan } from '../plan.js';
import type { SpendAuthority } from '../spend-policy.js';
import type { ToolContext } from '../tools/tool.js';

/** What a handler sees: the turn's context before any tool runs. */
export type TriggerContext = Omit<ToolContext, 'toolUseId' | 'authority'>;

/** The trigger turns out to need no turn: it ends without a model call or a post. */
export interface SkipTurn {
  skip: string;
  /** Writes made in the same transaction as the turn's end. */
  onSkip?(db: Db): Promise<void>;
}

export type Prepared<Facts> = { facts: Facts } | SkipTurn;

/**
 * One kind of trigger (mention, button, platform event, sweep). The turn loop calls, in order:
 * `authorize` (a refusal ends the trigger, told to the person ephemerally), `prepare` (reads and
 * writes what the turn needs: fetch the resource behind an event, advance the plan, record a
 * decision; runs once per turn, not again when a crashed turn resumes) and `render` (pure: the
 * message the model reads).
 */
export interface TriggerHandler<Facts = unknown> {
  /** What a turn woken by this trigger may authorize spending on (see the spend policy). */
  readonly authority: SpendAuthority;
  /** No person is waiting: after an outage the job engine retries the turn instead of telling the thread. */
  readonly automatic: boolean;
  authorize(ctx: TriggerContext): Failure | undefined;
  prepare(ctx: TriggerContext): Promise<Prepared<Facts>>;
  render(facts: Facts): string;
  /**
   * When set, the turn makes no model call: this message, written by code, is posted and `render`'s
   * text is kept in the history with it, so later turns know what happened (the Stop).
   */
  reply?(facts: Facts): DirectReply;
}

/** A message code writes for the thread, and its one-line Activity summary. */
export interface DirectReply {
  text: string;
  summary: string;
}

/** The message with the thread's agreed plan appended, when there is one. */
export function withPlan(text: string, plan: Plan | undefined): string {
  return plan ? `${text}\n\n[Agreed plan of this thread]\n${describePlan(plan)}` : text;
}
