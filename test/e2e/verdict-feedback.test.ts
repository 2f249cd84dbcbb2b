// End to end: feedback on the verdict. The whole loop runs, the verdict carries Slack's feedback
// buttons; clicks (as Slack sends them for a feedback_buttons element) record a vote per person,
// a later click changes it, each click is answered ephemerally, and the Activity log (Home tab and
// CSV export) shows the votes on the turn that wrote the verdict. Where Slack refuses the block, the
// plain 👍 / 👎 buttons record votes the same way.
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { sendBlockAction, type FakeMessage } from '../kit/fakes/slack/index.js';
import { CHANNEL, startHarness, TEAM, waitForVerdict, type Harness } from '../kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';
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
    h = await startHarness({ script: loopScript() });
    const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    const verdict = await waitForVerdict(h, mention.ts, 90_000);
    const element = elementsOf(verdict, 'context_actions')[0]!;
    expect(element).toMatchObject({ type: 'feedback_buttons', action_id: ACTION_IDS.verdictFeedback });
    // The bot records the message's ts once Slack has answered the post: a moment after the fake Slack holds it.
    const post = await waitUntil(
      () => h!.db.db.selectFrom('posts').select(['id', 'turn_id']).where('team_id', '=', TEAM).where('slack_ts', '=', verdict.ts).executeTakeFirst(),
      10_000,
      'the verdict post recorded with its Slack ts',
    );

    // The owner likes it; a colleague does not.
    const first = await clickFeedback(h, verdict, mention.ts, OWNER, 'positive');
    expect(first.status).toBe(200);
    await ephemeralTo(h, OWNER, /^Thanks: your :\+1: on this verdict is recorded/);
    expect((await clickFeedback(h, verdict, mention.ts, READER, 'negative')).status).toBe(200);
    await ephemeralTo(h, READER, /^Thanks: your :-1: on this verdict is recorded/);
    expect(await votes(h)).toEqual([
      { user_id: OWNER, vote: 'positive', turn_id: post.turn_id, post_id: post.id },
      { user_id: READER, vote: 'negative', turn_id: post.turn_id, post_id: post.id },
    ]);

    // The owner changes their mind: still one vote each.
    expect((await clickFeedback(h, verdict, mention.ts, OWNER, 'negative')).status).toBe(200);
    await ephemeralTo(h, OWNER, /now :-1: \(it was :\+1:\)/);
    expect((await votes(h)).map((v) => [v.user_id, v.vote])).toEqual([[OWNER, 'negative'], [READER, 'negative']]);

    // A forged value and a click on a message that is no verdict record nothing. The vote is stored
    // before Slack gets its answer, so the table can be read as soon as the click is answered.
    const forged = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
      user: READER, teamId: TEAM, channel: CHANNEL, messageTs: verdict.ts, threadTs: mention.ts,
      actionId: ACTION_IDS.verdictFeedback, value: 'maybe', elementType: 'feedback_buttons',
    });
    expect(forged.status).toBe(200);
    const launch = h.posts(mention.ts)[0]!;
    const elsewhere = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
      user: READER, teamId: TEAM, channel: CHANNEL, messageTs: launch.ts, threadTs: mention.ts,
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
    expect(rows).toHaveLength(turnRows.length);
    expect(h.slack.violations).toEqual([]);
  }, 180_000);

  it('where Slack refuses the feedback buttons, the verdict has plain 👍 / 👎 buttons that record votes the same way', async () => {
    h = await startHarness({ script: loopScript(), slackOptions: { refuseBlockTypes: ['context_actions'] } });
    const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    const verdict = await waitForVerdict(h, mention.ts, 90_000);
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
      threadTs: mention.ts,
      actionId: thumbsDown.action_id,
      value: thumbsDown.value!,
      actionText: thumbsDown.text!.text,
    });
    expect(click.status).toBe(200);
    await ephemeralTo(h, READER, /^Thanks: your :-1: on this verdict is recorded/);
    expect((await votes(h)).map((v) => [v.user_id, v.vote])).toEqual([[READER, 'negative']]);
  }, 180_000);
});
