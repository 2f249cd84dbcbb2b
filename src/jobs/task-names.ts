// The job engine's task names, defined once: the store enqueues them in SQL, the worker runs them.

/** One turn of the agent for one stored trigger (payload `{ triggerId }`), queued per chat. */
export const RUN_TURN_TASK = 'run_turn';
/** The reconcile sweep over runs and trainings whose finish event is overdue. */
export const RECONCILE_TASK = 'reconcile';
/** Publishes (or refreshes) one person's App Home view. */
export const PUBLISH_HOME_TASK = 'publish_home';
/** Updates a message after a button choice, or answers one person ephemerally. */
export const BUTTON_FEEDBACK_TASK = 'button_feedback';
/** Brings one chat's live plan message up to date (payload `{ teamId, chatId }`), queued per chat. */
export const PLAN_PROGRESS_TASK = 'plan_progress';
