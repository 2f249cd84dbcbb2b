// Block Kit for a turn's post: the agent's text with the mention, code-built attachments, a sandbox note.
import { ACTION_IDS } from '../action-ids.js';
import { SLACK_LIMITS, splitText } from '../limits.js';
import { escapeMrkdwn, fromModelMarkdown, mentionUser, truncateMrkdwn } from '../mrkdwn.js';

export interface MessagePayload {
  text: string;
  blocks: unknown[];
}

/** Converts the Markdown the model writes into Slack mrkdwn, escaped (see {@link fromModelMarkdown}). */
export function toMrkdwn(markdown: string, ownerUserId?: string): string {
  return fromModelMarkdown(markdown, ownerUserId ? { ownerUserId } : {});
}

/** The post starts with the bot's own mention of the person, unless the rendered text already carries it. */
function withMention(userId: string, text: string): string {
  const mention = mentionUser(userId);
  return text.includes(mention) ? text : `${mention} ${text}`;
}

/** Keeps at most `max` blocks, replacing the overflow with a context line saying how many were cut. */
export function capBlocks(blocks: unknown[], max: number = SLACK_LIMITS.blocksPerMessage): unknown[] {
  if (blocks.length <= max) return blocks;
  const kept = blocks.slice(0, max - 1);
  return [
    ...kept,
    { type: 'context', elements: [{ type: 'mrkdwn', text: `+${blocks.length - kept.length} more not shown` }] },
  ];
}

export function sandboxNote(): unknown {
  return {
    type: 'context',
    elements: [{ type: 'mrkdwn', text: ':test_tube: Sandbox platform: simulated runs and trainings, no real GPU time.' }],
  };
}

/** The note under a message about work a real engine did, naming it. */
export function engineNote(engine: string): unknown {
  return { type: 'context', elements: [{ type: 'mrkdwn', text: `:gear: Engine: ${escapeMrkdwn(engine)}` }] };
}

export function buildTurnBlocks(input: {
  mentionUserId: string;
  text: string;
  attachments?: unknown[];
  sandbox?: boolean;
  /** A real engine named instead of the sandbox note. */
  engine?: string | null;
}): MessagePayload {
  const text = withMention(input.mentionUserId, toMrkdwn(input.text.trim() || 'Done.', input.mentionUserId));
  const sections = splitText(text, SLACK_LIMITS.sectionText).map((chunk) => ({
    type: 'section',
    text: { type: 'mrkdwn', text: chunk },
  }));
  const blocks = [...sections, ...(input.attachments ?? [])];
  if (input.engine) blocks.push(engineNote(input.engine));
  else if (input.sandbox) blocks.push(sandboxNote());
  return { text: truncateMrkdwn(text, 3_000), blocks: capBlocks(blocks) };
}

export function buildFailureBlocks(input: { mentionUserId: string; reason: string; retryTriggerId: string }): MessagePayload {
  const text = `${mentionUser(input.mentionUserId)} I couldn't reach the model: ${escapeMrkdwn(input.reason)}, even after retrying. Nothing is lost: press Retry or reply in this thread and I'll pick up where I stopped.`;
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text } },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            text: { type: 'plain_text', text: 'Retry' },
            action_id: ACTION_IDS.retry,
            value: JSON.stringify({ kind: 'retry', trigger: input.retryTriggerId }),
          },
        ],
      },
    ],
  };
}
