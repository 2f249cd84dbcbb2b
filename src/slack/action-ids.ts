// Slack action ids: stable strings, defined once.
export const ACTION_IDS = {
  retry: 'verdict_retry',
  nextStep: 'verdict_next_step',
  approve: 'verdict_approve',
  pickOption: 'verdict_pick_option',
  homeScope: 'home_scope',
  homeMore: 'home_more',
  homeCsv: 'home_download_csv',
  /** Feedback on a verdict: the feedback_buttons element, and the plain buttons that stand in for it. */
  verdictFeedback: 'verdict_feedback',
} as const;

/** Slack wants action ids unique within a block: the n-th button of a kind gets a suffix. */
export function indexedActionId(base: string, index: number): string {
  return index === 0 ? base : `${base}:${index}`;
}

/** Matches every action id that continues a chat (becomes a button trigger). */
export const CHAT_ACTION_PATTERN = new RegExp(
  `^(${[ACTION_IDS.retry, ACTION_IDS.nextStep, ACTION_IDS.approve, ACTION_IDS.pickOption].join('|')})(:\\d+)?$`,
);

/** Matches the feedback buttons of a verdict (the element, or either plain fallback button). */
export const VERDICT_FEEDBACK_PATTERN = new RegExp(`^${ACTION_IDS.verdictFeedback}(:\\d+)?$`);
