// Slack action ids: stable strings, defined once.
export const ACTION_IDS = {
  retry: 'verdict_retry',
  nextStep: 'verdict_next_step',
  approve: 'verdict_approve',
  pickOption: 'verdict_pick_option',
  homeScope: 'home_scope',
  homeMore: 'home_more',
  homeCsv: 'home_download_csv',
} as const;

/** Slack wants action ids unique within a block: the n-th button of a kind gets a suffix. */
export function indexedActionId(base: string, index: number): string {
  return index === 0 ? base : `${base}:${index}`;
}

/** Matches every action id that continues a chat (becomes a button trigger). */
export const CHAT_ACTION_PATTERN = new RegExp(
  `^(${[ACTION_IDS.retry, ACTION_IDS.nextStep, ACTION_IDS.approve, ACTION_IDS.pickOption].join('|')})(:\\d+)?$`,
);
