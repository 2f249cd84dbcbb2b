// End to end: feedback on the verdict. The state the feedback path starts from is seeded through the
// store the way a turn ends (src/agent/turn.ts): the thread's chat, a launch turn and the verdict
// turn, each with its reply in the outbox and its Activity entry. The bot's own outbox then delivers
// those posts to the fake Slack, so the clicks land on the message the bot really posted, with its
// real blocks. The loop that writes a verdict is not what is tested here (test/e2e/loop.test.ts runs
// it), and running it twice cost most of this file's time. Clicks (as Slack sends them for a
// feedback_buttons element) record a vote per person, a later click changes it, each click is
// answered ephemerally, and the Activity log (Home tab and CSV export) shows the votes on the turn
// that wrote the verdict. Where Slack refuses the block, the plain 👍 / 👎 buttons record votes the
// same way.
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { verdictChoices } from '../../src/agent/next-steps.js';
import type { Reply } from '../../src/agent/reply.js';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { recordActivity } from '../../src/store/activity.js';
import { getChat, getTriggerWithChat } from '../../src/store/chats.js';
import { createPost } from '../../src/store/posts.js';
import { resourceEventKey } from '../../src/store/resource-events.js';
import { enqueueTrigger, setTriggerStatus, type ChatTarget, type TriggerInput } from '../../src/store/triggers.js';
import { finishTurn, startTurn } from '../../src/store/turns.js';
import { sendBlockAction, slackTs, type FakeMessage, type FakeSlackOptions } from '../kit/fakes/slack/index.js';
import { CHANNEL, isVerdict, startHarness, TEAM, type Harness } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';

const OWNER = 'UOWNER';
const READER = 'UREADER';

interface FeedbackElement {
  type: string;
  action_id: string;
  value?: string;
  positive_button?: { value: string; text: { text: string } };
  negative_button?: { value: string; text: { text: string } };
  text?: { text: string };
}

const elementsOf = (post: FakeMessage, blockType: string): FeedbackElement[] =>
  ((post.blocks ?? []) as Array<{ type: string; elements?: FeedbackElement[] }>).filter((b) => b.type === blockType).flatMap((b) => b.elements ?? []);

const outcomes = (n: number, correct: (i: number) => boolean): QuestionOutcome[] =>
  Array.from({ length: n }, (_, i) => ({ questionId: `q${String(i).padStart(3, '0')}`, category: `c${i % 3}`, correct: correct(i) }));

/**
 * The verdict turn's reply as benchmark-analyze attaches it: the comparison of two runs computed in
 * code, and the verdict's next steps. Five fixed and none broken of 60 is no detectable change, so
 * keeping the base model is among them.
 */
function verdictReply(): Reply {
  const comparison = compareRuns({ before: outcomes(60, (i) => i % 2 === 0), after: outcomes(60, (i) => i % 2 === 0 || i % 7 === 1) });
  const refs = { benchmarkId: '104', baseModelId: 'base-model', trainedModelId: 'ft/base-model-lora', beforeRunId: 'run_before', afterRunId: 'run_after', augmentation: 5 };
  return {
    to: OWNER,
    text: 'Training on the failures changed little: five questions fixed, none broken, within the noise.',
    parts: [
      {
        kind: 'comparison',
        comparison,
        before: { runId: refs.beforeRunId, modelId: refs.baseModelId },
        after: { runId: refs.afterRunId, modelId: refs.trainedModelId },
        cost: { costs: [{ label: `baseline run ${refs.beforeRunId}`, credits: 4, charged: true, estimated: 4 }], agentUsd: 0.02, agentTurnsUsd: [0.01, 0.01], elapsedMs: 60_000 },
      },
      { kind: 'choices', options: verdictChoices(comparison, refs) },
    ],
    origin: { kind: 'sandbox' },
  };
}

/**
 * Stores a turn that has ended, as src/agent/turn.ts ends one, in one transaction: its trigger (with
 * its job, and the chat when the target creates it), the turn, its reply in the outbox, the turn
 * finished, its Activity entry, the trigger done. The worker then finds the trigger done and only
 * delivers the chat's pending posts through the bot's outbox; no model is called.
 */
async function seedEndedTurn(h: Harness, target: ChatTarget, input: Omit<TriggerInput, 'teamId'>, reply: Reply) {
  const model = h.bot()!.config.agent.model;
  return h.db.db.transaction().execute(async (trx) => {
    const queued = (await enqueueTrigger(trx, target, { teamId: TEAM, ...input }))!;
    const chat = (await getChat(trx, TEAM, queued.chatId))!;
    const { turn } = await startTurn(trx, { teamId: TEAM, chatId: chat.id, triggerId: queued.triggerId, model });
    const post = await createPost(trx, { teamId: TEAM, chatId: chat.id, turnId: turn.id, postKey: `turn:${turn.id}:reply`, channelId: chat.channel_id, threadTs: chat.thread_ts, reply });
    const finished = await finishTurn(trx, TEAM, turn.id, 'completed');
    const trigger = (await getTriggerWithChat(trx, queued.triggerId))!.trigger;
    await recordActivity(trx, { chat, turn: finished, trigger, summary: reply.text, postId: post.id });
    await setTriggerStatus(trx, TEAM, trigger.id, 'done');
    return { chatId: chat.id, turnId: turn.id, postId: post.id };
  });
}

/**
 * A thread the owner opened with a mention: the launch turn's post (no verdict), then the verdict
 * turn woken by the trained model's run, both delivered by the bot. Returns the Slack messages of
 * both and the stored verdict post.
 */
async function seedThread(h: Harness) {
  const threadTs = slackTs();
  const text = 'benchmark base-model on 104, train on its failures, then benchmark again';
  h.slack.seedMessage({ channel: CHANNEL, user: OWNER, text, ts: threadTs });
  const launch = await seedEndedTurn(
    h,
    { create: true, channelId: CHANNEL, threadTs, ownerUserId: OWNER },
    { kind: 'mention', dedupeKey: `msg:${CHANNEL}:${threadTs}`, userId: OWNER, payload: { text, ts: threadTs } },
    { to: OWNER, text: 'Launched the baseline run run_before of base-model on benchmark 104 (4 credits).', parts: [], origin: { kind: 'sandbox' } },
  );
  const verdict = await seedEndedTurn(
    h,
    { chatId: launch.chatId },
    { kind: 'platform_event', dedupeKey: resourceEventKey('run', 'run_after', 'completed'), userId: null, payload: { type: 'run.completed', resourceKind: 'run', resourceId: 'run_after' } },
    verdictReply(),
  );
  // The bot records a message's ts once Slack has answered the post: a moment after the fake Slack holds it.
  const delivered = await waitUntil(
    async () => {
      const rows = await h.db.db.selectFrom('posts').select(['id', 'turn_id', 'slack_ts']).where('team_id', '=', TEAM).where('chat_id', '=', launch.chatId).where('status', '=', 'posted').orderBy('id').execute();
      return rows.length === 2 ? rows : undefined;
    },
    20_000,
    'both seeded posts delivered by the bot',
  );
  expect(delivered.map((p) => [p.id, p.turn_id])).toEqual([[launch.postId, launch.turnId], [verdict.postId, verdict.turnId]]);
  const messageOf = (ts: string | null) => h.posts(threadTs).find((m) => m.ts === ts)!;
  const launchMessage = messageOf(delivered[0]!.slack_ts);
  const verdictMessage = messageOf(delivered[1]!.slack_ts);
  expect(isVerdict(verdictMessage)).toBe(true);
  expect(isVerdict(launchMessage)).toBe(false);
  return { threadTs, launch: launchMessage, verdict: verdictMessage, post: { id: verdict.postId, turn_id: verdict.turnId } };
}

/** A harness whose model must not be called: every post here comes from the store, not from a turn. */
async function startFeedbackHarness(slackOptions?: FakeSlackOptions) {
  return startHarness({
    script: () => {
      throw new Error('no turn runs the model in this test');
    },
    ...(slackOptions ? { slackOptions } : {}),
  });
}

/** A click on one button of the feedback_buttons element, as Slack reports it. */
function clickFeedback(h: Harness, post: FakeMessage, threadTs: string, user: string, vote: 'positive' | 'negative') {
  const element = elementsOf(post, 'context_actions').find((e) => e.type === 'feedback_buttons')!;
  const button = vote === 'positive' ? element.positive_button! : element.negative_button!;
  return sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
    user,
    teamId: TEAM,
    channel: CHANNEL,
    messageTs: post.ts,
    threadTs,
    actionId: element.action_id,
    value: button.value,
    actionText: button.text.text,
    elementType: 'feedback_buttons',
  });
}

async function votes(h: Harness) {
  return h.db.db.selectFrom('verdict_feedback').select(['user_id', 'vote', 'turn_id', 'post_id']).where('team_id', '=', TEAM).orderBy('user_id').execute();
}

const ephemeralTo = (h: Harness, user: string, pattern: RegExp) => waitUntil(() => h.slack.ephemerals.find((e) => e.user === user && pattern.test(e.text)), 20_000, `the answer to ${user} matching ${pattern}`);

describe('feedback on the verdict', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('records a vote per person, changes it on a later click, and shows it on the verdict\'s Activity line and in the CSV', async () => {
    h = await startFeedbackHarness();
    const { threadTs, launch, verdict, post } = await seedThread(h);
    const element = elementsOf(verdict, 'context_actions')[0]!;
    expect(element).toMatchObject({ type: 'feedback_buttons', action_id: ACTION_IDS.verdictFeedback });

    // The owner likes it; a colleague does not.
    const first = await clickFeedback(h, verdict, threadTs, OWNER, 'positive');
    expect(first.status).toBe(200);
    await ephemeralTo(h, OWNER, /^Thanks: your :\+1: on this verdict is recorded/);
    expect((await clickFeedback(h, verdict, threadTs, READER, 'negative')).status).toBe(200);
    await ephemeralTo(h, READER, /^Thanks: your :-1: on this verdict is recorded/);
    expect(await votes(h)).toEqual([
      { user_id: OWNER, vote: 'positive', turn_id: post.turn_id, post_id: post.id },
      { user_id: READER, vote: 'negative', turn_id: post.turn_id, post_id: post.id },
    ]);

    // The owner changes their mind: still one vote each.
    expect((await clickFeedback(h, verdict, threadTs, OWNER, 'negative')).status).toBe(200);
    await ephemeralTo(h, OWNER, /now :-1: \(it was :\+1:\)/);
    expect((await votes(h)).map((v) => [v.user_id, v.vote])).toEqual([[OWNER, 'negative'], [READER, 'negative']]);

    // A forged value and a click on a message that is no verdict (the launch post of the same
    // thread) record nothing. The vote is stored before Slack gets its answer, so the table can be
    // read as soon as the click is answered.
    const forged = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
      user: READER, teamId: TEAM, channel: CHANNEL, messageTs: verdict.ts, threadTs,
      actionId: ACTION_IDS.verdictFeedback, value: 'maybe', elementType: 'feedback_buttons',
    });
    expect(forged.status).toBe(200);
    const elsewhere = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
      user: READER, teamId: TEAM, channel: CHANNEL, messageTs: launch.ts, threadTs,
      actionId: ACTION_IDS.verdictFeedback, value: 'positive', elementType: 'feedback_buttons',
    });
    expect(elsewhere.status).toBe(200);
    expect((await votes(h)).map((v) => [v.user_id, v.vote])).toEqual([[OWNER, 'negative'], [READER, 'negative']]);
    await ephemeralTo(h, READER, /holds no verdict I can record feedback on\. Nothing was recorded\./);

    // The Activity log shows the votes on the line of the turn that wrote the verdict.
    await waitUntil(() => (JSON.stringify(h!.slack.homeViews.get(OWNER) ?? {}).includes('Feedback: 👍 0 · 👎 2') ? true : undefined), 30_000, 'the feedback in the owner\'s Home tab');
    const home = JSON.stringify(h.slack.homeViews.get(OWNER));
    expect(home.match(/Feedback: /g)).toHaveLength(1);
    expect(home).toContain(`<@${OWNER}> 👎, <@${READER}> 👎`);

    // And the CSV export carries the same figures on that turn's row only.
    const csvClick = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, { user: OWNER, teamId: TEAM, actionId: ACTION_IDS.homeCsv, value: 'mine', view: { id: 'VHOME', type: 'home' } });
    expect(csvClick.status).toBe(200);
    // The thread's accuracy chart is a completed upload too: the export is the CSV one.
    const file = await waitUntil(() => [...h!.slack.files.values()].find((f) => f.completed && f.filename.endsWith('.csv')), 30_000, 'the CSV export');
    const rows = parse(file.content.toString('utf8'), { columns: true }) as Array<Record<string, string>>;
    const voted = rows.filter((r) => r.votes !== '');
    expect(voted).toHaveLength(1);
    expect(voted[0]).toMatchObject({ feedback_positive: '0', feedback_negative: '2', votes: `${OWNER}:negative; ${READER}:negative` });
    const turnRows = await h.db.db.selectFrom('activity').select(['post_id']).where('team_id', '=', TEAM).execute();
    expect(turnRows).toHaveLength(2);
    expect(rows).toHaveLength(turnRows.length);
    expect(h.slack.violations).toEqual([]);
    expect(h.model.requests).toEqual([]);
  }, 60_000);

  it('where Slack refuses the feedback buttons, the verdict has plain 👍 / 👎 buttons that record votes the same way', async () => {
    h = await startFeedbackHarness({ refuseBlockTypes: ['context_actions'] });
    const { threadTs, verdict } = await seedThread(h);
    expect(elementsOf(verdict, 'context_actions')).toEqual([]);
    const plain = elementsOf(verdict, 'actions').filter((e) => e.action_id.startsWith(ACTION_IDS.verdictFeedback));
    expect(plain.map((e) => [e.text?.text, e.value])).toEqual([['👍', 'positive'], ['👎', 'negative']]);
    // The next-step buttons are still offered.
    expect(elementsOf(verdict, 'actions').some((e) => e.text?.text === 'Keep the base model')).toBe(true);

    const thumbsDown = plain[1]!;
    const click = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
      user: READER,
      teamId: TEAM,
      channel: CHANNEL,
      messageTs: verdict.ts,
      threadTs,
      actionId: thumbsDown.action_id,
      value: thumbsDown.value!,
      actionText: thumbsDown.text!.text,
    });
    expect(click.status).toBe(200);
    await ephemeralTo(h, READER, /^Thanks: your :-1: on this verdict is recorded/);
    expect((await votes(h)).map((v) => [v.user_id, v.vote])).toEqual([[READER, 'negative']]);
    expect(h.model.requests).toEqual([]);
  }, 60_000);
});
