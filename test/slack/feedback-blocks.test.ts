// The verdict's feedback buttons as blocks (pure): their shape against Slack's documented limits (the
// fake's validator), the plain stand-in, where they sit, and how the Activity log shows the votes.
import type { ContextActionsBlock, KnownBlock } from '@slack/types';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { ACTION_IDS, VERDICT_FEEDBACK_PATTERN } from '../../src/slack/action-ids.js';
import { buildActivityCsv, buildHomeView, CSV_COLUMNS } from '../../src/slack/blocks/app-home.js';
import { feedbackAsPlainButtons, feedbackLine, verdictFeedbackBlock, verdictFeedbackFallbackBlock } from '../../src/slack/blocks/feedback.js';
import { capBlocks } from '../../src/slack/blocks/reply.js';
import type { ActivityEntry } from '../../src/store/activity-queries.js';
import { parseVote } from '../../src/store/verdict-feedback.js';
import { validateBlocks } from '../kit/fakes/slack/index.js';

const section = (text: string): KnownBlock => ({ type: 'section', text: { type: 'mrkdwn', text } });

describe('feedback buttons', () => {
  it('is a context_actions block holding one feedback_buttons element that Slack takes, valued positive and negative', () => {
    const block: ContextActionsBlock = verdictFeedbackBlock();
    expect(validateBlocks([block], 'message')).toEqual([]);
    const [element] = block.elements;
    expect(element).toMatchObject({ type: 'feedback_buttons', action_id: ACTION_IDS.verdictFeedback });
    if (element?.type !== 'feedback_buttons') throw new Error('not feedback buttons');
    expect(parseVote(element.positive_button.value)).toBe('positive');
    expect(parseVote(element.negative_button.value)).toBe('negative');
    expect(VERDICT_FEEDBACK_PATTERN.test(element.action_id!)).toBe(true);
  });

  it('the fake refuses what Slack refuses: feedback_buttons outside context_actions, too many elements, long texts, missing values', () => {
    const good = verdictFeedbackBlock().elements[0]!;
    const longText = { ...good, positive_button: { text: { type: 'plain_text', text: 'x'.repeat(76) }, value: 'positive' } };
    const noValue = { ...good, negative_button: { text: { type: 'plain_text', text: 'no' } } };
    const mrkdwnText = { ...good, positive_button: { text: { type: 'mrkdwn', text: '*yes*' }, value: 'positive' } };
    const longValue = { ...good, positive_button: { text: { type: 'plain_text', text: 'ok' }, value: 'v'.repeat(2001) } };
    const cases: Array<[unknown, RegExp]> = [
      [{ type: 'actions', elements: [good] }, /only be used in a context_actions block/],
      [{ type: 'context', elements: [good] }, /only be used in a context_actions block/],
      [{ type: 'context_actions', elements: Array.from({ length: 6 }, (_, i) => ({ ...good, action_id: `f${i}` })) }, /1 to 5 elements/],
      [{ type: 'context_actions', elements: [] }, /1 to 5 elements/],
      [{ type: 'context_actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'b' }, action_id: 'b' }] }, /feedback_buttons or icon_button/],
      [{ type: 'context_actions', elements: [longText] }, /at most 75 characters/],
      [{ type: 'context_actions', elements: [noValue] }, /negative_button value is required/],
      [{ type: 'context_actions', elements: [mrkdwnText] }, /must be plain_text/],
      [{ type: 'context_actions', elements: [longValue] }, /at most 2000 characters/],
      [{ type: 'context_actions', elements: [good, good] }, /not unique in its block/],
    ];
    for (const [block, reason] of cases) {
      const problems = validateBlocks([block], 'message');
      expect(problems.map((p) => p.message).join('; '), JSON.stringify(block).slice(0, 120)).toMatch(reason);
    }
  });

  it('falls back to two plain buttons with the same action ids family and values, replacing only the feedback block', () => {
    const blocks = [section('verdict'), verdictFeedbackBlock(), { type: 'actions', elements: [] }, section('note')];
    const plain = feedbackAsPlainButtons(blocks)!;
    expect(plain.map((b) => (b as { type: string }).type)).toEqual(['section', 'actions', 'actions', 'section']);
    expect(plain[0]).toBe(blocks[0]);
    expect(plain[2]).toBe(blocks[2]);
    const fallback = verdictFeedbackFallbackBlock();
    expect(plain[1]).toEqual(fallback);
    expect(validateBlocks([fallback], 'message')).toEqual([]);
    const buttons = fallback.elements as Array<{ action_id: string; value: string; text: { text: string } }>;
    expect(buttons.map((b) => b.text.text)).toEqual(['👍', '👎']);
    expect(buttons.map((b) => parseVote(b.value))).toEqual(['positive', 'negative']);
    for (const b of buttons) expect(VERDICT_FEEDBACK_PATTERN.test(b.action_id)).toBe(true);
    expect(feedbackAsPlainButtons([section('no feedback here')])).toBeUndefined();
  });

  it('survives a cut to Slack\'s 50 blocks, like the next-step buttons', () => {
    const blocks: KnownBlock[] = [...Array.from({ length: 60 }, (_, i) => section(`line ${i}`)), verdictFeedbackBlock()];
    const capped = capBlocks(blocks, 50);
    expect(capped).toHaveLength(50);
    expect(capped.some((b) => b.type === 'context_actions')).toBe(true);
  });
});

const entry = (over: Partial<ActivityEntry> = {}): ActivityEntry => ({
  id: '1',
  turnId: '7',
  chatId: '3',
  createdAt: new Date('2026-12-05T08:00:00Z'),
  ownerUserId: 'UOWNER',
  channelId: 'C0LOOP',
  threadTs: '1733150000.000100',
  triggerKind: 'platform_event',
  triggerLabel: 'run.completed',
  summary: 'The verdict: improved',
  postPermalink: null,
  postTs: null,
  threadPermalink: null,
  resources: [],
  agentCostUsd: '0.0100000000',
  creditsEstimated: '0.0000',
  creditsCharged: null,
  creditsInFlight: '0.0000',
  ...over,
});

describe('feedback in the Activity log', () => {
  const feedback = {
    positive: 2,
    negative: 1,
    votes: [
      { userId: 'UOWNER', vote: 'positive' as const },
      { userId: 'UREADER', vote: 'negative' as const },
      { userId: 'UTHIRD', vote: 'positive' as const },
    ],
  };

  it('shows the tallies and who voted on the turn\'s line, within Slack\'s limits', () => {
    const view = buildHomeView({
      entries: [entry({ feedback }), entry({ id: '2', turnId: '8', summary: 'No verdict here' })],
      totals: { loopsInProgress: 0, creditsSpent: '0', creditsInFlight: '0', agentCostUsd: '0', turns: 2 },
      scope: 'mine',
      page: 0,
      hasMore: false,
      balance: null,
    });
    const text = JSON.stringify(view.blocks);
    expect(text).toContain('Feedback: 👍 2 · 👎 1 (<@UOWNER> 👍, <@UREADER> 👎, <@UTHIRD> 👍)');
    expect(text.match(/Feedback:/g)).toHaveLength(1);
    expect(validateBlocks(view.blocks, 'home')).toEqual([]);
    expect(feedbackLine({ ...feedback, votes: [...feedback.votes, ...feedback.votes] }, 5)).toMatch(/, \+1 more\)$/);
  });

  it('adds feedback_positive, feedback_negative and votes to the CSV', () => {
    const rows = parse(buildActivityCsv([entry({ feedback }), entry({ id: '2' })])) as string[][];
    const header = rows[0]!;
    expect(header).toEqual([...CSV_COLUMNS]);
    expect(header.slice(-3)).toEqual(['feedback_positive', 'feedback_negative', 'votes']);
    const col = (row: number, name: string) => rows[row]![header.indexOf(name)];
    expect([col(1, 'feedback_positive'), col(1, 'feedback_negative'), col(1, 'votes')]).toEqual(['2', '1', 'UOWNER:positive; UREADER:negative; UTHIRD:positive']);
    expect([col(2, 'feedback_positive'), col(2, 'feedback_negative'), col(2, 'votes')]).toEqual(['0', '0', '']);
  });
});
