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

/** Every action id that continues a chat (becomes a button trigger). */
export const CHAT_ACTION_IDS: readonly string[] = [
  ACTION_IDS.retry,
  ACTION_IDS.nextStep,
  ACTION_IDS.approve,
  ACTION_IDS.pickOption,
];
