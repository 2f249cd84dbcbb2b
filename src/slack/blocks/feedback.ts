// Feedback on a verdict: Slack's feedback buttons in a context_actions block, and two plain buttons
// that stand in for them where Slack refuses the new block (same action ids and values, same handler).
import type { ActionsBlock, ContextActionsBlock, FeedbackButtons } from '@slack/types';
import type { VerdictFeedbackSummary, Vote } from '../../store/verdict-feedback.js';
import { ACTION_IDS, indexedActionId } from '../action-ids.js';
import { mentionUser } from '../mrkdwn.js';

const LABELS: Record<Vote, { text: string; accessibility: string }> = {
  positive: { text: '👍', accessibility: 'This verdict was useful' },
  negative: { text: '👎', accessibility: 'This verdict was not useful' },
};

const feedbackButton = (vote: Vote): FeedbackButtons['positive_button'] => ({
  text: { type: 'plain_text', text: LABELS[vote].text, emoji: true },
  accessibility_label: LABELS[vote].accessibility,
  value: vote,
});

/** The verdict's feedback buttons: a click sends a block_actions payload whose value is the vote. */
export function verdictFeedbackBlock(): ContextActionsBlock {
  return {
    type: 'context_actions',
    elements: [
      {
        type: 'feedback_buttons',
        action_id: ACTION_IDS.verdictFeedback,
        positive_button: feedbackButton('positive'),
        negative_button: feedbackButton('negative'),
      },
    ],
  };
}

/** The plain stand-in: 👍 and 👎 as ordinary buttons carrying the same values. */
export function verdictFeedbackFallbackBlock(): ActionsBlock {
  return {
    type: 'actions',
    elements: (['positive', 'negative'] as const).map((vote, i) => ({
      type: 'button' as const,
      text: { type: 'plain_text' as const, text: LABELS[vote].text, emoji: true },
      accessibility_label: LABELS[vote].accessibility,
      action_id: indexedActionId(ACTION_IDS.verdictFeedback, i),
      value: vote,
    })),
  };
}

const isFeedbackBlock = (block: unknown): boolean => {
  const b = block as { type?: unknown; elements?: unknown } | null;
  return b?.type === 'context_actions' && Array.isArray(b.elements) && b.elements.some((e) => (e as { type?: unknown } | null)?.type === 'feedback_buttons');
};

/**
 * The message's blocks with the feedback buttons replaced by their plain stand-in, or undefined
 * when the blocks hold none (so a refusal has another cause).
 */
export function feedbackAsPlainButtons(blocks: readonly unknown[]): unknown[] | undefined {
  if (!blocks.some(isFeedbackBlock)) return undefined;
  return blocks.map((block) => (isFeedbackBlock(block) ? verdictFeedbackFallbackBlock() : block));
}

/** "👍 2 · 👎 1 (<@U1> 👍, <@U2> 👎)": a turn's feedback on one line, at most `maxVoters` named. */
export function feedbackLine(feedback: VerdictFeedbackSummary, maxVoters = 5): string {
  const named = feedback.votes.slice(0, maxVoters).map((v) => `${mentionUser(v.userId)} ${LABELS[v.vote].text}`);
  const more = feedback.votes.length > maxVoters ? `, +${feedback.votes.length - maxVoters} more` : '';
  return `Feedback: ${LABELS.positive.text} ${feedback.positive} · ${LABELS.negative.text} ${feedback.negative} (${named.join(', ')}${more})`;
}

/** The votes for the CSV export: `U1:positive; U2:negative`. */
export function feedbackVotesCell(feedback: VerdictFeedbackSummary | null | undefined): string {
  return (feedback?.votes ?? []).map((v) => `${v.userId}:${v.vote}`).join('; ');
}
