// The reconcile sweep: polls runs and trainings whose finish event is overdue and triggers the same turn.
import cron from 'node-cron';
import type { Logger } from 'pino';
import { isFinishedStatus, type Platform } from '@verdict/contract/platform';
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

/**
 * Queues the sweep on the cron schedule. stop() waits for a queueing in flight: one still running then failed on
 * the closed pool, and logged after the bot had stopped.
 */
export function scheduleReconcileSweep(options: { cron: string; enqueue: () => Promise<unknown>; logger: Logger }): { stop(): Promise<void> } {
  const inFlight = new Set<Promise<void>>();
  const task = cron.schedule(options.cron, () => {
    const queued = options.enqueue().then(
      () => undefined,
      (error: unknown) => options.logger.warn({ err: error }, 'could not schedule the reconcile sweep'),
    );
    inFlight.add(queued);
    void queued.finally(() => inFlight.delete(queued));
  });
  return {
    stop: async () => {
      await task.stop();
      await Promise.all(inFlight);
    },
  };
}
