// The reconcile sweep: polls runs and trainings whose finish event is overdue and triggers the same turn.
import type { Logger } from 'pino';
import { isFinishedStatus, type Platform } from '../platform/platform.js';
import type { Db } from '../store/db.js';
import { enqueueSweptOutcome } from '../store/resource-events.js';
import { listOverdueResources, updateResourceStatus } from '../store/resources.js';

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
    const kind = resource.kind as 'run' | 'training';
    let status: string;
    try {
      status = kind === 'run' ? (await platform.getRun(resource.platform_id)).status : (await platform.getTraining(resource.platform_id)).status;
    } catch (error) {
      logger.warn({ err: error, resourceId: resource.platform_id }, 'sweep could not read a resource; will try again');
      continue;
    }
    if (!isFinishedStatus(status)) {
      // Still running: push it back so the sweep looks again after another overdue period.
      await updateResourceStatus(db, resource.team_id, resource.id, { status });
      continue;
    }
    const result = await enqueueSweptOutcome(
      db,
      { teamId: resource.team_id, id: resource.id, kind, platformId: resource.platform_id },
      status,
      { maxAttempts: options.eventRetryAttempts },
    );
    if (result.created) {
      triggered += 1;
      logger.info({ resourceId: resource.platform_id, type: `${kind}.${status}`, teamId: resource.team_id }, 'sweep found a finished resource whose event never arrived');
    }
  }
  return { checked: overdue.length, triggered };
}
