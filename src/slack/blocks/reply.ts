// Renders the agent's typed reply as a Slack message: pure, within every Slack limit, degrading
// (cut with "+N more", a table as text, text alone) instead of failing.
import type { ActionsBlock, Button, KnownBlock } from '@slack/types';
import type { ProgressPart, Reply, ReplyOrigin } from '../../agent/reply.js';
import { SLACK_LIMITS, splitText, truncate } from '../limits.js';
import { escapeMrkdwn, fromModelMarkdown, mentionUser, truncateMrkdwn } from '../mrkdwn.js';
import { choiceBlock, type MadeChoice } from './button-choices.js';
import { renderItems, type OfferedChoice } from '../offered-choices.js';
import { buildComparisonBlocks } from './comparison.js';
import { verdictFeedbackBlock } from './feedback.js';

export interface MessagePayload {
  text: string;
  blocks: KnownBlock[];
}

function actionsBlock(choice: OfferedChoice): ActionsBlock {
  return {
    type: 'actions',
    elements: choice.buttons.map((b): Button => ({
      type: 'button',
      text: { type: 'plain_text', text: b.label },
      action_id: b.actionId,
      value: b.value,
      ...(b.primary ? { style: 'primary' as const } : {}),
    })),
  };
}

const PROGRESS_ICONS: Record<ProgressPart['steps'][number]['status'], string> = {
  pending: ':white_circle:',
  running: ':hourglass_flowing_sand:',
  completed: ':white_check_mark:',
  failed: ':x:',
  skipped: ':heavy_minus_sign:',
};

/** Progress as plain lines (the fallback every richer progress surface keeps). */
function progressBlocks(part: ProgressPart): KnownBlock[] {
  const lines = part.steps.map((s) => `${PROGRESS_ICONS[s.status]} ${escapeMrkdwn(s.label)}${s.detail ? ` · ${escapeMrkdwn(s.detail)}` : ''}`);
  const text = `*${escapeMrkdwn(part.title)}*\n${lines.join('\n')}`;
  return [{ type: 'section', text: { type: 'mrkdwn', text: truncateMrkdwn(text, SLACK_LIMITS.sectionText) } }];
}

export function originNote(origin: ReplyOrigin): KnownBlock {
  const text = origin.kind === 'engine' ? `:gear: Engine: ${escapeMrkdwn(origin.name)}` : ':test_tube: Sandbox platform: simulated runs and trainings, no real GPU time.';
  return { type: 'context', elements: [{ type: 'mrkdwn', text }] };
}

/** The post starts with the bot's own mention of the person, unless the rendered text already carries it. */
function withMention(userId: string, text: string): string {
  const mention = mentionUser(userId);
  return text.includes(mention) ? text : `${mention} ${text}`;
}

/** The reply's text as mrkdwn: the model's Markdown escaped, led by the mention of the person it is for. */
export function replyText(reply: Pick<Reply, 'to' | 'text'>): string {
  return withMention(reply.to, fromModelMarkdown(reply.text.trim() || 'Done.', { ownerUserId: reply.to }));
}

/**
 * Keeps at most `max` blocks. Buttons (and feedback buttons) are kept (a choice offered must stay clickable); other blocks
 * are kept in order while there is room, and the first one cut gives way to "+N more not shown".
 */
export function capBlocks<B>(blocks: readonly B[], max: number = SLACK_LIMITS.blocksPerMessage): Array<B | KnownBlock> {
  if (blocks.length <= max) return [...blocks];
  const isActions = (b: B) => ['actions', 'context_actions'].includes(String((b as { type?: unknown } | null)?.type));
  const keep = new Set(blocks.flatMap((b, i) => (isActions(b) ? [i] : [])).slice(0, max - 1));
  let room = max - 1 - keep.size;
  blocks.forEach((b, i) => {
    if (!isActions(b) && room > 0) {
      keep.add(i);
      room -= 1;
    }
  });
  const out: Array<B | KnownBlock> = [];
  let noted = false;
  blocks.forEach((b, i) => {
    if (keep.has(i)) out.push(b);
    else if (!noted) {
      noted = true;
      out.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `+${blocks.length - keep.size} more not shown` }] });
    }
  });
  return out;
}

/**
 * How rich a message is, from what Slack takes first down to what it always takes. The poster steps
 * down one level each time Slack answers invalid_blocks (src/slack/poster.ts).
 * - `full`: every block (Slack's bar chart of the accuracies, the questions that changed in a data table);
 * - `no_chart_block`: the same without the bar chart (the PNG in the thread shows it);
 * - `questions_as_text`: the questions as text, the summary table kept;
 * - `all_text`: no table block at all, every table as text;
 * - `plain`: the text alone, no blocks.
 */
export type RenderLevel = 'full' | 'no_chart_block' | 'questions_as_text' | 'all_text' | 'plain';
export const RENDER_LEVELS: readonly RenderLevel[] = ['full', 'no_chart_block', 'questions_as_text', 'all_text', 'plain'];

/**
 * The message for a reply. `chosen` are the choices already made in it: each shows who chose what
 * and when in place of its buttons. `level` is how rich it may be (default `full`); `notes` are
 * short context lines added at its end (a chart that could not be uploaded).
 */
export function renderReply(
  reply: Reply,
  options: { chosen?: readonly MadeChoice[]; level?: RenderLevel; notes?: readonly string[] } = {},
): MessagePayload {
  const level = options.level ?? 'full';
  const text = replyText(reply);
  const chosen = new Map((options.chosen ?? []).map((c) => [c.choiceIndex, c]));
  const blocks: KnownBlock[] = splitText(text, SLACK_LIMITS.sectionText).map((chunk) => ({ type: 'section', text: { type: 'mrkdwn', text: chunk } }));
  let tables = 0;
  for (const item of renderItems(reply)) {
    if (item.kind === 'choice') {
      const made = chosen.get(item.choice.choiceIndex);
      blocks.push(made ? choiceBlock(made) : actionsBlock(item.choice));
      continue;
    }
    const part = item.part;
    switch (part.kind) {
      case 'comparison':
        blocks.push(
          ...buildComparisonBlocks(part, {
            tableAllowed: level !== 'all_text' && tables < SLACK_LIMITS.tablesPerMessage,
            questions: level === 'full' || level === 'no_chart_block' ? 'table' : 'text',
            chartBlock: level === 'full',
          }),
        );
        tables += 1;
        // Feedback on the verdict, after the comparison and before the next-step buttons.
        blocks.push(verdictFeedbackBlock());
        break;
      case 'progress':
        blocks.push(...progressBlocks(part));
        break;
      case 'legacy_blocks':
        blocks.push(...(part.blocks as KnownBlock[]));
        tables += part.blocks.filter((b) => (b as { type?: string } | null)?.type === 'table').length;
        break;
      default:
        // A part kind this version does not know (written by a newer replica): shown by its text alone.
        break;
    }
  }
  // The origin note and the given notes survive any cut: every message about simulated work says so.
  const note: KnownBlock[] = [
    ...(options.notes ?? []).map((text): KnownBlock => ({ type: 'context', elements: [{ type: 'mrkdwn', text: truncate(text, SLACK_LIMITS.contextText) }] })),
    ...(reply.origin ? [originNote(reply.origin)] : []),
  ];
  if (level === 'plain') return { text: truncateMrkdwn(text, SLACK_LIMITS.fallbackText), blocks: [] };
  return { text: truncateMrkdwn(text, SLACK_LIMITS.fallbackText), blocks: [...capBlocks(blocks, SLACK_LIMITS.blocksPerMessage - note.length), ...note] };
}
