// The live plan message: synced by the turn that may have changed the plan, at its end, and, while
// a step runs (or a write had to wait), by a keyed poll job that reschedules itself. The poll runs
// on the chat's own turn queue, so a poll, a turn and the sync at a turn's end never overlap and
// two writes of one message never race, in this process or another replica.
import type { Task, TaskList } from 'graphile-worker';
import type { Logger } from 'pino';
import type { PlanSyncResult } from '../slack/plan-message.js';
import type { Db } from '../store/db.js';
import type { Chat } from '../store/tables.js';
import { addJob } from '../store/jobs.js';
import { turnQueueName } from '../store/triggers.js';
import { PLAN_PROGRESS_TASK } from './task-names.js';

interface PlanProgressPayload {
  teamId: string;
  chatId: string;
}

const pollKeyOf = (p: PlanProgressPayload) => `plan-poll:${p.teamId}:${p.chatId}`;

export interface PlanProgressDeps {
  db: Db;
  logger: Logger;
  /** `chat`: the chat as the turn that just ended holds it (else the sync reads it). */
  sync(teamId: string, chatId: string, chat?: Chat): Promise<PlanSyncResult>;
  /** Polls while a step runs (default). Off: a sync is rescheduled only when its write had to wait. */
  poll?: boolean;
}

export interface PlanProgress {
  tasks: TaskList;
  /**
   * Syncs the chat's plan message from inside the job of a turn that just ended (it holds the
   * chat's queue). A sync that fails is left to a job, which retries it.
   */
  afterTurn(chat: Chat): Promise<void>;
}

export function createPlanProgress(deps: PlanProgressDeps): PlanProgress {
  const syncAndReschedule = async (payload: PlanProgressPayload, chat?: Chat) => {
    const result = await deps.sync(payload.teamId, payload.chatId, chat);
    if (result.againInMs === undefined) return;
    if (deps.poll === false && result.outcome !== 'paced' && result.outcome !== 'rate_limited') return;
    // One pending poll per chat: a later reschedule replaces it (a running one keeps going and loses its key).
    await addJob(deps.db, {
      identifier: PLAN_PROGRESS_TASK,
      payload,
      queueName: turnQueueName(payload.chatId),
      jobKey: pollKeyOf(payload),
      jobKeyMode: 'replace',
      runAt: new Date(Date.now() + result.againInMs),
      maxAttempts: 5,
    });
  };
  const task: Task = async (raw) => syncAndReschedule(raw as PlanProgressPayload);
  return {
    tasks: { [PLAN_PROGRESS_TASK]: task },
    afterTurn: async (chat) => {
      const payload = { teamId: chat.team_id, chatId: String(chat.id) };
      try {
        await syncAndReschedule(payload, chat);
      } catch (error) {
        deps.logger.warn({ err: error, chatId: payload.chatId }, 'the plan message could not be synced after the turn; a job retries it');
        await addJob(deps.db, { identifier: PLAN_PROGRESS_TASK, payload, queueName: turnQueueName(payload.chatId), maxAttempts: 5 });
      }
    },
  };
}
