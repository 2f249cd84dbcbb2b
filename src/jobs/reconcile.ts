// The reconcile sweep: polls runs and trainings whose finish event is overdue and triggers the same turn.
import type { Logger } from 'pino';
import { isFinishedStatus, type Platform } from '../platform/platform.js';
import type { Db } from '../store/db.js';
import {
  listOverdueResources,
  markResourceNotified,
  resourceEventKey,
  updateResourceStatus,
} from '../store/resources.js';
import { enqueueTrigger } from '../store/triggers.js';

export async function reconcileOverdue(options: {
  db: Db;
  platform: Platform;
  logger: Logger;
  overdueSeconds: number;
  eventRetryAttempts: number;
}): Promise<{ checked: number; triggered: number }> {
  const { db, platform, logger } = options;
  const overdue = await listOverdueResources(db, options.overdueSeconds);
  let triggered = 0;
  for (const resource of overdue) {
    let status: string;
    try {
      status =
        resource.kind === 'run'
          ? (await platform.getRun(resource.platform_id)).status
          : (await platform.getTraining(resource.platform_id)).status;
    } catch (error) {
      logger.warn({ err: error, resourceId: resource.platform_id }, 'sweep could not read a resource; will try again');
      continue;
    }
    if (!isFinishedStatus(status)) {
      // Still running: push it back so the sweep looks again after another overdue period.
      await updateResourceStatus(db, resource.team_id, resource.id, { status });
      continue;
    }
    const type = `${resource.kind}.${status}`;
    const result = await db.transaction().execute(async (trx) => {
      const enqueued = await enqueueTrigger(
        trx,
        { chatId: resource.chat_id },
        {
          teamId: resource.team_id,
          kind: 'reconcile',
          dedupeKey: resourceEventKey(resource.kind, resource.platform_id, status),
          userId: null,
          payload: { type, resourceKind: resource.kind, resourceId: resource.platform_id },
        },
        { maxAttempts: options.eventRetryAttempts },
      );
      await markResourceNotified(trx, resource.team_id, resource.id);
      return enqueued;
    });
    if (result?.created) {
      triggered += 1;
      logger.info({ resourceId: resource.platform_id, type, teamId: resource.team_id }, 'sweep found a finished resource whose event never arrived');
    }
  }
  return { checked: overdue.length, triggered };
}
