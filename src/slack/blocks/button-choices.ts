// The choices a post offers (its chat buttons and their grants) and how the message reads once one is made.
import type { ButtonGrant } from '../../agent/spend-guard.js';
import { CHAT_ACTION_PATTERN } from '../action-ids.js';

const GRANT_KINDS = new Set(['approve', 'next', 'retry', 'pick']);

/** A grant as the bot's own code writes it into a button value, or undefined. */
export function parseGrant(value: unknown): ButtonGrant | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const grant = JSON.parse(value) as ButtonGrant;
    return grant && typeof grant === 'object' && GRANT_KINDS.has(grant.kind) ? grant : undefined;
  } catch {
    return undefined;
  }
}

export interface OfferedButton {
  actionId: string;
  label: string;
  /** The exact value posted; a click must carry it unchanged. */
  value: string;
  grant: ButtonGrant;
}

/** One actions block: its buttons are alternatives, so the first allowed click closes all of them. */
export interface OfferedChoice {
  blockIndex: number;
  buttons: OfferedButton[];
}

export interface MadeChoice {
  blockIndex: number;
  userId: string;
  label: string;
  at: Date;
}

interface ButtonElement {
  type?: string;
  action_id?: string;
  value?: string;
  text?: { text?: string };
}

/** Every chat button in the blocks whose value is a grant the bot understands, grouped by actions block. */
export function offeredChoices(blocks: readonly unknown[] | undefined): OfferedChoice[] {
  const choices: OfferedChoice[] = [];
  (blocks ?? []).forEach((block, blockIndex) => {
    const b = block as { type?: string; elements?: ButtonElement[] };
    if (b?.type !== 'actions' || !Array.isArray(b.elements)) return;
    const buttons: OfferedButton[] = [];
    for (const element of b.elements) {
      if (element?.type !== 'button' || typeof element.action_id !== 'string' || !CHAT_ACTION_PATTERN.test(element.action_id)) continue;
      if (typeof element.value !== 'string') continue;
      const grant = parseGrant(element.value);
      if (!grant) continue;
      buttons.push({ actionId: element.action_id, label: element.text?.text ?? element.action_id, value: element.value, grant });
    }
    if (buttons.length > 0) choices.push({ blockIndex, buttons });
  });
  return choices;
}

function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Slack renders this in the reader's own time zone; the fallback is UTC. */
function slackDate(at: Date): string {
  const epoch = Math.floor(at.getTime() / 1000);
  const fallback = `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return `<!date^${epoch}^{date_short_pretty} at {time}|${fallback}>`;
}

/** "<@U> chose *Label* on <date>": the line that replaces a used set of buttons. */
export function choiceLine(choice: Omit<MadeChoice, 'blockIndex'>): string {
  return `:white_check_mark: <@${choice.userId}> chose *${escapeMrkdwn(choice.label)}* ${slackDate(choice.at)}`;
}

/** The ephemeral answer to a click on a button whose choice was already made. */
export function alreadyDoneText(choice: Omit<MadeChoice, 'blockIndex'>): string {
  return `Already done by <@${choice.userId}>: they chose "${escapeMrkdwn(choice.label)}" ${slackDate(choice.at)}. Nothing was changed.`;
}

/** The message's blocks with each chosen actions block replaced by who chose what and when. */
export function retireChosen(blocks: readonly unknown[], chosen: readonly MadeChoice[]): unknown[] {
  const byIndex = new Map(chosen.map((c) => [c.blockIndex, c]));
  return blocks.map((block, i) => {
    const choice = byIndex.get(i);
    if (!choice || (block as { type?: string }).type !== 'actions') return block;
    return { type: 'context', elements: [{ type: 'mrkdwn', text: choiceLine(choice) }] };
  });
}
