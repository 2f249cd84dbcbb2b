// The live plan message as jobs: a kick when a turn may have changed the plan, and, while a step runs
// (or a write had to wait), a keyed poll that reschedules itself. Both run on one queue per chat, so
// two writes of one message never race, in this process or another replica.
import type { Task, TaskList } from 'graphile-worker';
import type { Logger } from 'pino';
import type { PlanSyncResult } from '../slack/plan-message.js';
import type { Db } from '../store/db.js';
import { addJob } from '../store/jobs.js';
import { PLAN_PROGRESS_TASK } from './task-names.js';

interface PlanProgressPayload {
  teamId: string;
  chatId: string;
}

const queueOf = (p: PlanProgressPayload) => `plan:${p.teamId}:${p.chatId}`;
const pollKeyOf = (p: PlanProgressPayload) => `plan-poll:${p.teamId}:${p.chatId}`;

export interface PlanProgressScheduler {
  /** Runs a sync of the chat's plan message now (unkeyed: a kick is never lost to a pending poll). */
  kick(teamId: string, chatId: string): Promise<void>;
}

export function createPlanProgressScheduler(db: Db): PlanProgressScheduler {
  return {
    kick: async (teamId, chatId) => {
      const payload = { teamId, chatId };
      await addJob(db, { identifier: PLAN_PROGRESS_TASK, payload, queueName: queueOf(payload), maxAttempts: 5 });
    },
  };
}

export function createPlanProgressTasks(deps: {
  db: Db;
  logger: Logger;
  sync(teamId: string, chatId: string): Promise<PlanSyncResult>;
  /** Polls while a step runs (default). Off: a sync is rescheduled only when its write had to wait. */
  poll?: boolean;
}): TaskList {
  const task: Task = async (raw) => {
    const payload = raw as PlanProgressPayload;
    const result = await deps.sync(payload.teamId, payload.chatId);
    if (result.againInMs === undefined) return;
    if (deps.poll === false && result.outcome !== 'paced' && result.outcome !== 'rate_limited') return;
    // One pending poll per chat: a later reschedule replaces it (a running one keeps going and loses its key).
    await addJob(deps.db, {
      identifier: PLAN_PROGRESS_TASK,
      payload,
      queueName: queueOf(payload),
      jobKey: pollKeyOf(payload),
      jobKeyMode: 'replace',
      runAt: new Date(Date.now() + result.againInMs),
      maxAttempts: 5,
    });
  };
  return { [PLAN_PROGRESS_TASK]: task };
}
