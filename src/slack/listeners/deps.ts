// What listeners may touch: storing a trigger and enqueueing work. No business logic lives here.
import type { InstallationStore } from '@slack/bolt';
import type { Logger } from 'pino';
import type { Db } from '../../store/db.js';
import type { EnqueueResult, SlackTriggerInput } from '../../store/triggers.js';

export interface ListenerDeps {
  db: Db;
  logger: Logger;
  /** Slack user ids who may use spending buttons in any thread (besides its owner). */
  adminUserIds: readonly string[];
  /** Stores a mention or thread reply with its turn job (durably, before the listener returns and Slack is answered). */
  enqueueTrigger(target: SlackTriggerInput['target'], input: SlackTriggerInput['input']): Promise<EnqueueResult | undefined>;
  /** Queues a refresh of a user's App Home view (collapsed per user). */
  enqueueHome(teamId: string, userId: string, options?: { scope?: string; page?: number; csv?: boolean }): Promise<void>;
  /** OAuth mode: the installations, whose tokens an uninstall deletes; undefined with one bot token. */
  installations?: Required<Pick<InstallationStore, 'deleteInstallation'>>;
}
