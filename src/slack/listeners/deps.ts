// What listeners may touch: storing a trigger and enqueueing work. No business logic lives here.
import type { Logger } from 'pino';
import type { Db } from '../../store/db.js';

export interface ListenerDeps {
  db: Db;
  logger: Logger;
  /** Slack user ids who may use spending buttons in any thread (besides its owner). */
  adminUserIds: readonly string[];
  /** Queues a refresh of a user's App Home view (collapsed per user). */
  enqueueHome(teamId: string, userId: string, options?: { scope?: string; page?: number; csv?: boolean }): Promise<void>;
}
