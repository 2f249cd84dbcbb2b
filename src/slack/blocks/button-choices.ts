// How a made choice reads: the line that replaces a used set of buttons, the answer to a late click.
import type { KnownBlock } from '@slack/types';
import { choiceLine, type MadeChoice } from '../choice-text.js';

export type { MadeChoice } from '../choice-text.js';

/** The context block that stands where a choice's buttons were. */
export function choiceBlock(choice: Omit<MadeChoice, 'choiceIndex'>): KnownBlock {
  return { type: 'context', elements: [{ type: 'mrkdwn', text: choiceLine(choice) }] };
}

/**
 * A post stored as blocks by an earlier version: its blocks with each chosen actions block replaced
 * by who chose what and when.
 */
export function retireChosen(blocks: readonly unknown[], chosen: readonly MadeChoice[]): unknown[] {
  const byIndex = new Map(chosen.map((c) => [c.choiceIndex, c]));
  return blocks.map((block, i) => {
    const choice = byIndex.get(i);
    if (!choice || (block as { type?: string }).type !== 'actions') return block;
    return choiceBlock(choice);
  });
}
