// Buttons act once: the grants a post offers, stored with it, and the one atomic claim of a click.
import { sql } from 'kysely';
import type { ButtonGrant } from '../agent/reply.js';
import { BUTTON_FEEDBACK_TASK } from '../jobs/task-names.js';
import { alreadyDoneText, type MadeChoice } from '../slack/choice-text.js';
import type { OfferedChoice } from '../slack/offered-choices.js';
import type { Db } from './db.js';
import { addJobFromInserted } from './triggers.js';
import type { Trigger } from './tables.js';

/** What the button-feedback job does: update the message after a choice, or answer one person. */
export type ButtonFeedback =
  | { kind: 'update'; teamId: string; postId: string }
  | { kind: 'ephemeral'; teamId: string; channel: string; user: string; threadTs?: string; text: string };

/**
 * Stores the choices a post offers and the grant of each of their buttons (with the exact action id
 * and value the message carries), in one statement. Called when the post is written to the outbox,
 * in its transaction: a crash loses both or neither, and the grants are bound to the message once
 * the poster records its ts. A choice's `block_index` is its position among the reply's choices.
 */
export async function storeOfferedChoices(db: Db, post: { id: string; teamId: string; chatId: string; choices: readonly OfferedChoice[] }): Promise<number> {
  const rows = post.choices.flatMap((choice) =>
    choice.buttons.map((b) => ({ block_index: choice.choiceIndex, action_id: b.actionId, label: b.label, value: b.value, grant: b.grant })),
  );
  if (rows.length === 0) return 0;
  await sql`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(block_index int, action_id text, label text, value text, "grant" jsonb)
    ),
    choices as (
      insert into button_choices (team_id, chat_id, post_id, block_index)
      select distinct ${post.teamId}, ${post.chatId}::bigint, ${post.id}::bigint, block_index from input
      on conflict on constraint button_choices_block do nothing
      returning id, block_index
    )
    insert into button_grants (team_id, choice_id, post_id, action_id, label, value, "grant")
    select ${post.teamId}, choices.id, ${post.id}::bigint, i.action_id, i.label, i.value, i."grant"
    from input i join choices using (block_index)
    on conflict on constraint button_grants_action do nothing`.execute(db);
  return rows.length;
}

interface ChoiceState {
  value: string;
  owner_user_id: string;
  thread_ts: string;
  claimed_by: string | null;
  claimed_at: Date | null;
  chosen_label: string | null;
}

export interface ButtonClick {
  teamId: string;
  channelId: string;
  /** The message holding the button, as Slack reports it. */
  messageTs: string;
  /** The thread Slack reports, used only to place an ephemeral answer when the message is unknown. */
  threadTs?: string;
  actionId: string;
  /** The value the click carried; it must equal the one posted. */
  value: string;
  userId: string;
}

export type ClickOutcome =
  | { outcome: 'claimed'; triggerId: string; chatId: string }
  | { outcome: 'already'; by: string; label: string; at: Date }
  | { outcome: 'not_allowed'; ownerUserId: string }
  | { outcome: 'tampered' }
  | { outcome: 'not_offered' };

interface OfferedTarget {
  grant_id: string;
  choice_id: string;
  label: string;
  value: string;
  owner_user_id: string;
  thread_ts: string;
}

/** How long a click waits for the outbox to record the ts of a message Slack has just shown. */
const DELIVERY_WAIT_MS = 1500;

/**
 * The button a click names, in the message it names. A message can be clicked in the moment
 * between Slack taking it and the outbox recording its ts; while a delivery is in flight in that
 * channel the lookup is repeated for a short while (well within Slack's 3 s for the ack).
 */
async function findOffered(db: Db, click: ButtonClick): Promise<OfferedTarget | undefined> {
  const deadline = Date.now() + DELIVERY_WAIT_MS;
  for (;;) {
    const target = await sql<OfferedTarget & { delivering: boolean }>`
      select g.id as grant_id, g.choice_id, g.label, g.value, c.owner_user_id, c.thread_ts, false as delivering
      from posts p
      join button_grants g on g.post_id = p.id and g.action_id = ${click.actionId}
      join button_choices ch on ch.id = g.choice_id
      join chats c on c.id = ch.chat_id and c.team_id = p.team_id
      where p.team_id = ${click.teamId} and p.channel_id = ${click.channelId} and p.slack_ts = ${click.messageTs}
      union all
      select null, null, null, null, null, null, exists (
        select 1 from posts where team_id = ${click.teamId} and channel_id = ${click.channelId} and status = 'pending' and attempts > 0
      )`.execute(db);
    const found = target.rows.find((r) => !r.delivering && r.grant_id !== null);
    if (found) return found;
    const delivering = target.rows.some((r) => r.delivering);
    if (!delivering || Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Decides a click. What the message offered (its grants, the thread's owner) never changes once
 * posted, so it is read first; the decision itself is one statement: the first allowed click on an
 * offered button, with the value it was posted with, claims its choice (every button of that
 * actions block) by the choice's primary key, stores the button trigger with its turn job, and
 * queues the message update. A concurrent click, in this process or another replica, waits on the
 * choice's row and then finds it claimed. Any other click changes nothing and is answered with an
 * ephemeral message (queued as a job).
 */
export async function claimButtonClick(db: Db, click: ButtonClick, options: { adminUserIds: readonly string[]; maxAttempts?: number }): Promise<ClickOutcome> {
  const offered = await findOffered(db, click);
  const allowed = offered !== undefined && (offered.owner_user_id === click.userId || options.adminUserIds.includes(click.userId));
  let row: ChoiceState | undefined;
  if (offered && allowed && offered.value === click.value) {
    const claimed = await sql<{ trigger_id: string | null; chat_id: string | null }>`
      with claimed as (
        update button_choices set claimed_by = ${click.userId}, claimed_at = now(), chosen_grant_id = ${offered.grant_id}::bigint
        where id = ${offered.choice_id}::bigint and team_id = ${click.teamId} and claimed_at is null
        returning id, team_id, chat_id, post_id
      ),
      inserted as (
        insert into triggers (team_id, chat_id, kind, dedupe_key, user_id, payload)
        select team_id, chat_id, 'button', 'choice:' || id::text, ${click.userId},
          jsonb_build_object('choiceId', id::text, 'grantId', ${offered.grant_id}::text, 'label', ${offered.label}::text,
            'actionId', ${click.actionId}::text, 'messageTs', ${click.messageTs}::text)
        from claimed
        on conflict on constraint triggers_dedupe do nothing
        returning id, chat_id
      ),
      turn_job as (${addJobFromInserted(options.maxAttempts ?? 25)}),
      update_job as (
        select graphile_worker.add_job(${BUTTON_FEEDBACK_TASK}, json_build_object('kind', 'update', 'teamId', team_id, 'postId', post_id::text),
          job_key => 'button-update:' || post_id::text, max_attempts => 10)
        from claimed
      )
      select (select id::text from inserted) as trigger_id, (select chat_id::text from inserted) as chat_id,
             (select count(*) from turn_job) as turn_jobs, (select count(*) from update_job) as update_jobs`.execute(db);
    const won = claimed.rows[0];
    if (won?.trigger_id && won.chat_id) return { outcome: 'claimed', triggerId: won.trigger_id, chatId: won.chat_id };
  }
  if (offered) {
    // After the claim statement (which waited for any claim in flight), a new snapshot sees the winner.
    const state = await sql<ChoiceState>`
      select ${offered.value}::text as value, ${offered.owner_user_id}::text as owner_user_id, ${offered.thread_ts}::text as thread_ts,
             ch.claimed_by, ch.claimed_at, chosen.label as chosen_label
      from button_choices ch left join button_grants chosen on chosen.id = ch.chosen_grant_id
      where ch.id = ${offered.choice_id}::bigint`.execute(db);
    row = state.rows[0];
  }
  let outcome: ClickOutcome;
  let text: string;
  if (!row) {
    outcome = { outcome: 'not_offered' };
    text = 'That button is not one this thread offers (or it has expired). Nothing was done.';
  } else if (row.claimed_by && row.claimed_at) {
    outcome = { outcome: 'already', by: row.claimed_by, label: row.chosen_label ?? '', at: row.claimed_at };
    // A choice closed without a chosen button is one Slack's Stop closed (src/store/agent-sessions.ts).
    text =
      row.chosen_label === null
        ? `This thread was stopped by <@${row.claimed_by}>: its buttons are closed. Nothing was changed; mention me to start again.`
        : alreadyDoneText({ userId: row.claimed_by, label: row.chosen_label, at: row.claimed_at });
  } else if (row.value !== click.value) {
    outcome = { outcome: 'tampered' };
    text = 'That click does not match the button I posted. Nothing was done.';
  } else {
    outcome = { outcome: 'not_allowed', ownerUserId: row.owner_user_id };
    text = `Only <@${row.owner_user_id}>, who started this thread, or an admin can use these buttons: they spend credits. Nothing was changed.`;
  }
  const threadTs = row?.thread_ts ?? click.threadTs;
  const feedback: ButtonFeedback = {
    kind: 'ephemeral',
    teamId: click.teamId,
    channel: click.channelId,
    user: click.userId,
    ...(threadTs ? { threadTs } : {}),
    text,
  };
  await sql`select graphile_worker.add_job(${BUTTON_FEEDBACK_TASK}, ${JSON.stringify(feedback)}::json, max_attempts => 3)`.execute(db);
  return outcome;
}

/** The choices made in a post, for the message update. */
export async function madeChoices(db: Db, teamId: string, postId: string): Promise<MadeChoice[]> {
  const rows = await db
    .selectFrom('button_choices as ch')
    .innerJoin('button_grants as g', 'g.id', 'ch.chosen_grant_id')
    .select(['ch.block_index', 'ch.claimed_by', 'ch.claimed_at', 'g.label'])
    .where('ch.team_id', '=', teamId)
    .where('ch.post_id', '=', postId)
    .where('ch.claimed_at', 'is not', null)
    .execute();
  return rows.map((r) => ({ choiceIndex: r.block_index, userId: r.claimed_by!, label: r.label, at: r.claimed_at! }));
}

/**
 * The grant a button trigger was claimed for, read from the store (never from the click's value),
 * and only if that trigger is the claim of a choice in this very chat by this very person.
 */
export async function grantOfTrigger(db: Db, trigger: Pick<Trigger, 'id' | 'team_id' | 'chat_id' | 'kind' | 'user_id' | 'payload' | 'dedupe_key'>): Promise<ButtonGrant | undefined> {
  if (trigger.kind !== 'button' || !trigger.user_id) return undefined;
  const { choiceId, grantId } = trigger.payload as { choiceId?: unknown; grantId?: unknown };
  if (typeof choiceId !== 'string' || typeof grantId !== 'string' || trigger.dedupe_key !== `choice:${choiceId}`) return undefined;
  const row = await db
    .selectFrom('button_choices as ch')
    .innerJoin('button_grants as g', 'g.id', 'ch.chosen_grant_id')
    .select('g.grant')
    .where('ch.team_id', '=', trigger.team_id)
    .where('ch.id', '=', choiceId)
    .where('ch.chat_id', '=', trigger.chat_id)
    .where('ch.chosen_grant_id', '=', grantId)
    .where('ch.claimed_by', '=', trigger.user_id)
    .executeTakeFirst();
  return row ? (row.grant as ButtonGrant) : undefined;
}
