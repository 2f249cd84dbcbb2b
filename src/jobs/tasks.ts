// Job-engine tasks: run a turn, sweep overdue platform work, refresh an App Home view.
import type { Task, TaskList } from 'graphile-worker';
import type { Logger } from 'pino';
import { RetryLater, runTurn, type TurnDeps } from '../agent/turn.js';
import type { ButtonFeedback } from '../store/button-choices.js';
import { reconcileOverdue } from './reconcile.js';
import { WorkspaceUnavailable } from '../slack/workspace-clients.js';
import { BUTTON_FEEDBACK_TASK, PUBLISH_HOME_TASK, RECONCILE_TASK, RUN_TURN_TASK } from './task-names.js';

export interface TaskDeps {
  turn: TurnDeps;
  logger: Logger;
  overdueSeconds: number;
  eventRetryAttempts: number;
  publishHome(teamId: string, userId: string, options: { scope?: string; page?: number; csv?: boolean }): Promise<void>;
  /** Updates a message after a choice, or answers one person's click (the Slack poster). */
  buttonFeedback(feedback: ButtonFeedback): Promise<void>;
}

/**
 * Ends a job quietly when its workspace has no installation (uninstalled, tokens revoked): retrying
 * cannot help and nobody can be told; what it was doing stays stored, and a reinstall resumes it.
 */
async function unlessUninstalled(logger: Logger, what: Record<string, unknown>, job: () => Promise<void>): Promise<void> {
  try {
    await job();
  } catch (error) {
    if (!(error instanceof WorkspaceUnavailable)) throw error;
    logger.info({ ...what, teamId: error.teamId, reason: error.message }, 'the workspace has no installation: its work waits for a reinstall');
  }
}

export function createTaskList(deps: TaskDeps): TaskList {
  const runTurnTask: Task = async (payload, helpers) => {
    const { triggerId } = payload as { triggerId: string };
    try {
      await unlessUninstalled(deps.logger, { triggerId }, () => runTurn(deps.turn, triggerId, { attempts: helpers.job.attempts, maxAttempts: helpers.job.max_attempts }));
    } catch (error) {
      if (!(error instanceof RetryLater)) deps.logger.error({ err: error, triggerId }, 'turn failed; it will be retried');
      throw error;
    }
  };
  const reconcileTask: Task = async () => {
    await reconcileOverdue({
      db: deps.turn.db,
      platform: deps.turn.platform,
      logger: deps.logger,
      overdueSeconds: deps.overdueSeconds,
      eventRetryAttempts: deps.eventRetryAttempts,
    });
  };
  const publishHomeTask: Task = async (payload) => {
    const { teamId, userId, scope, page, csv } = payload as {
      teamId: string;
      userId: string;
      scope?: string;
      page?: number;
      csv?: boolean;
    };
    await unlessUninstalled(deps.logger, { task: PUBLISH_HOME_TASK }, () =>
      deps.publishHome(teamId, userId, {
        ...(scope ? { scope } : {}),
        ...(page !== undefined ? { page } : {}),
        ...(csv ? { csv } : {}),
      }),
    );
  };
  const buttonFeedbackTask: Task = async (payload) => {
    await unlessUninstalled(deps.logger, { task: BUTTON_FEEDBACK_TASK }, () => deps.buttonFeedback(payload as ButtonFeedback));
  };
  return {
    [RUN_TURN_TASK]: runTurnTask,
    [RECONCILE_TASK]: reconcileTask,
    [PUBLISH_HOME_TASK]: publishHomeTask,
    [BUTTON_FEEDBACK_TASK]: buttonFeedbackTask,
  };
}
