// The live plan message: one plan block with a task card per step, and its plain-text fallback.
import type { KnownBlock, PlanBlock, RichTextBlock, RichTextElement, TaskCardBlock } from '@slack/types';
import type { PlanView, PlanViewStep } from '../../agent/plan-progress.js';
import { SLACK_LIMITS, truncate } from '../limits.js';
import { escapeMrkdwn, mentionUser } from '../mrkdwn.js';

const STATUS_WORDS: Record<PlanViewStep['status'], string> = {
  pending: 'pending',
  in_progress: 'in progress',
  complete: 'complete',
  error: 'error',
};

const STATUS_EMOJI: Record<PlanViewStep['status'], string> = {
  pending: ':white_circle:',
  in_progress: ':hourglass_flowing_sand:',
  complete: ':white_check_mark:',
  error: ':x:',
};

/** A link a task card may carry: http(s), no whitespace, within the URL limit Slack sets for links. */
const SOURCE_URL = /^https?:\/\/\S{1,2990}$/;

export interface PlanMessage {
  text: string;
  blocks: KnownBlock[];
}

/** A step's one-line detail as rich text, with its estimated finish as a Slack date (shown in each reader's time zone). */
function detailOf(step: PlanViewStep): RichTextBlock | undefined {
  const elements: RichTextElement[] = [];
  if (step.detail) elements.push({ type: 'text', text: truncate(step.detail, SLACK_LIMITS.sectionText) });
  if (step.estimatedFinishAt) {
    const at = Date.parse(step.estimatedFinishAt);
    if (Number.isFinite(at)) {
      elements.push({ type: 'text', text: `${elements.length > 0 ? ' · ' : ''}estimated finish ` });
      elements.push({ type: 'date', timestamp: Math.floor(at / 1000), format: '{time}', fallback: fallbackTime(at) });
    }
  }
  if (elements.length === 0) return undefined;
  return { type: 'rich_text', elements: [{ type: 'rich_text_section', elements }] };
}

function fallbackTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 16)} UTC`;
}

/** The plan's text alone: the notification text, and the whole message when Slack refuses the blocks. */
export function planFallbackText(view: PlanView, ownerUserId: string): string {
  const lines = [`${mentionUser(ownerUserId)} ${escapeMrkdwn(view.title)}`];
  view.steps.forEach((step, i) => {
    const eta = step.estimatedFinishAt && Number.isFinite(Date.parse(step.estimatedFinishAt)) ? ` · estimated finish ${fallbackTime(Date.parse(step.estimatedFinishAt))}` : '';
    const detail = step.detail ? `: ${escapeMrkdwn(truncate(step.detail, 300))}` : '';
    lines.push(`${STATUS_EMOJI[step.status]} ${i + 1}. ${escapeMrkdwn(step.title)} (${STATUS_WORDS[step.status]}${detail}${eta})`);
  });
  return truncate(lines.join('\n'), SLACK_LIMITS.fallbackText);
}

/**
 * The plan message. No block_id is set: Slack asks for a new one at each version of an updated
 * message and generates one when it is absent.
 */
export function buildPlanMessage(view: PlanView, ownerUserId: string): PlanMessage {
  const tasks: TaskCardBlock[] = view.steps.slice(0, SLACK_LIMITS.planTasks).map((step) => {
    const details = detailOf(step);
    return {
      type: 'task_card',
      task_id: step.id,
      title: truncate(step.title, SLACK_LIMITS.taskTitle),
      status: step.status,
      ...(details ? { details } : {}),
      ...(step.url && SOURCE_URL.test(step.url) ? { sources: [{ type: 'url', url: step.url, text: 'Open on the platform' }] } : {}),
    };
  });
  const plan: PlanBlock = { type: 'plan', title: truncate(view.title, SLACK_LIMITS.planTitle), tasks };
  return { text: planFallbackText(view, ownerUserId), blocks: [plan] };
}
