// Scheduling App Home publishes as jobs: on request at once, after a turn debounced per person.
import type { WorkerUtils } from 'graphile-worker';
import type { Db } from '../store/db.js';
import { addJob } from '../store/jobs.js';
import { PUBLISH_HOME_TASK } from './task-names.js';

/** A Home tab refreshed because a turn ended waits this long, so a burst of turns publishes it once. */
export const HOME_REFRESH_MS = 2000;

export interface HomeView {
  scope?: string;
  page?: number;
  /** An export of the Activity log as CSV: its own job, never collapsed into a refresh. */
  csv?: boolean;
}

export interface HomeScheduler {
  /** Publishes the view a person asked for (opening the tab, paging, filtering, exporting). */
  enqueue(teamId: string, userId: string, view?: HomeView): Promise<void>;
  /**
   * After a turn: at most one publish per person per {@link HOME_REFRESH_MS}, however many turns end.
   * Added through `db`, the transaction that ends the turn, so it costs that transaction no commit of its own.
   */
  refreshAfterTurn(db: Db, teamId: string, userId: string): Promise<void>;
}

/** Jobs go through the worker's utils once the worker runs; before that, nothing is scheduled. */
export function createHomeScheduler(utils: () => WorkerUtils | undefined): HomeScheduler {
  return {
    enqueue: async (teamId, userId, view = {}) => {
      await utils()?.addJob(
        PUBLISH_HOME_TASK,
        { teamId, userId, ...view },
        view.csv ? { maxAttempts: 3 } : { jobKey: `home:${teamId}:${userId}`, maxAttempts: 3 },
      );
    },
    refreshAfterTurn: async (db, teamId, userId) => {
      await addJob(db, {
        identifier: PUBLISH_HOME_TASK,
        payload: { teamId, userId },
        jobKey: `home:${teamId}:${userId}`,
        jobKeyMode: 'preserve_run_at',
        runAt: new Date(Date.now() + HOME_REFRESH_MS),
        maxAttempts: 3,
      });
    },
  };
}
