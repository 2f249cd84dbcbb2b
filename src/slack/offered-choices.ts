// The buttons a reply offers: each choice's exact action ids and values. The outbox stores them
// (button grants) and the message shows them, both from this one function, so a click can be
// checked against what was posted.
import type { ButtonGrant, ChoiceOption, Reply, ReplyPart } from '../agent/reply.js';
import { ACTION_IDS, CHAT_ACTION_PATTERN, indexedActionId } from './action-ids.js';
import { encodeButtonValue, parseGrant } from './button-value.js';
import { SLACK_LIMITS, truncate } from './limits.js';

/** One button of a choice as posted: the exact action id and value a click must carry, and its grant. */
export interface OfferedButton {
  actionId: string;
  label: string;
  value: string;
  grant: ButtonGrant;
  primary?: boolean;
}

/** A choice as posted: its buttons are alternatives, so the first allowed click closes all of them. */
export interface OfferedChoice {
  /** Its position among the reply's choices, stored with its grants (button_choices.block_index). */
  choiceIndex: number;
  buttons: OfferedButton[];
}

/** A reply's parts as rendered: interactive parts become choices, numbered in order. */
export type RenderItem = { kind: 'part'; part: Exclude<ReplyPart, { kind: 'choices' | 'approval' | 'retry' }> } | { kind: 'choice'; choice: OfferedChoice };

const GRANT_ACTION: Record<ButtonGrant['kind'], string> = {
  approve: ACTION_IDS.approve,
  next: ACTION_IDS.nextStep,
  pick: ACTION_IDS.pickOption,
  retry: ACTION_IDS.retry,
};

/** The options an interactive part offers. */
function optionsOf(part: Extract<ReplyPart, { kind: 'choices' | 'approval' | 'retry' }>): ChoiceOption[] {
  switch (part.kind) {
    case 'choices':
      return part.options;
    case 'approval':
      return [{ label: `Approve ${part.credits} credits`, grant: { kind: 'approve', intent: part.intent, credits: part.credits }, primary: true }];
    case 'retry':
      return [{ label: 'Retry', grant: { kind: 'retry', trigger: part.triggerId } }];
  }
}

/**
 * Legacy blocks (stored by an earlier version) with their chat buttons lifted out as choices, so
 * that they are offered, stored and retired like any other choice.
 */
function liftLegacyChoices(blocks: readonly unknown[]): ReplyPart[] {
  const out: ReplyPart[] = [];
  for (const block of blocks) {
    const b = block as { type?: string; elements?: Array<{ type?: string; action_id?: unknown; value?: unknown; text?: { text?: string }; style?: string }> };
    const options: ChoiceOption[] = [];
    if (b?.type === 'actions' && Array.isArray(b.elements)) {
      for (const e of b.elements) {
        const grant = e?.type === 'button' && typeof e.action_id === 'string' && CHAT_ACTION_PATTERN.test(e.action_id) ? parseGrant(e.value) : undefined;
        if (grant) options.push({ label: e.text?.text ?? e.action_id as string, grant, ...(e.style === 'primary' ? { primary: true } : {}) });
      }
    }
    if (options.length > 0) {
      out.push({ kind: 'choices', options });
      continue;
    }
    const last = out.at(-1);
    if (last?.kind === 'legacy_blocks') last.blocks.push(block);
    else out.push({ kind: 'legacy_blocks', blocks: [block] });
  }
  return out;
}

/**
 * The reply as render items: every interactive part a numbered choice whose buttons have their
 * action ids (unique in the message) and values. The renderer and the outbox's grant store both
 * read this, so what is stored is exactly what is posted.
 */
export function renderItems(reply: Reply): RenderItem[] {
  const counters = new Map<string, number>();
  const items: RenderItem[] = [];
  const parts = reply.parts.flatMap((part) => (part.kind === 'legacy_blocks' ? liftLegacyChoices(part.blocks) : [part]));
  for (const part of parts) {
    if (part.kind !== 'choices' && part.kind !== 'approval' && part.kind !== 'retry') {
      items.push({ kind: 'part', part });
      continue;
    }
    const buttons = optionsOf(part)
      .slice(0, SLACK_LIMITS.actionsElements)
      .map((option) => {
        const base = GRANT_ACTION[option.grant.kind];
        const n = counters.get(base) ?? 0;
        counters.set(base, n + 1);
        const button: OfferedButton = { actionId: indexedActionId(base, n), label: truncate(option.label, SLACK_LIMITS.buttonText), value: encodeButtonValue(option.grant), grant: option.grant };
        return option.primary ? { ...button, primary: true } : button;
      });
    if (buttons.length === 0) continue;
    const choiceIndex = items.filter((i) => i.kind === 'choice').length;
    items.push({ kind: 'choice', choice: { choiceIndex, buttons } });
  }
  return items;
}

/** The choices a reply offers, with the exact action ids, labels and values its message carries. */
export function offeredChoices(reply: Reply): OfferedChoice[] {
  return renderItems(reply).flatMap((item) => (item.kind === 'choice' ? [item.choice] : []));
}
