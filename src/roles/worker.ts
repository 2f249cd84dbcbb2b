// The worker role: the job workers that run turns, the reconcile sweep, and (under npm start only)
// the sandbox platform. It answers no Slack request and no webhook.
import type { Logger } from 'pino';
import { createModelClient, withScrubbedRequests, type ModelClient } from '../agent/model.js';
import { SYSTEM_PROMPT } from '../agent/system-prompt.js';
import { createTools } from '../agent/tools/index.js';
import { toolDefinitions } from '../agent/tools/tool.js';
import type { TurnDeps } from '../agent/turn.js';
import type { Config } from '../config.js';
import type { HomeScheduler } from '../jobs/home-refresh.js';
import { createPlanProgress } from '../jobs/plan-progress.js';
import { scheduleReconcileSweep } from '../jobs/reconcile.js';
import { RECONCILE_TASK } from '../jobs/task-names.js';
import { createTaskList } from '../jobs/tasks.js';
import { startWorker, type WorkerHandle } from '../jobs/worker.js';
import type { SecretScrubber } from '../logger.js';
import { inferenceFromConfig } from '@verdict/platform/engines/engine-setup';
import { trainingFromConfig } from '@verdict/platform/engines/training-setup';
import { createHttpPlatform } from '@verdict/contract/http-client';
import type { Platform } from '@verdict/contract/platform';
import { startSandbox, type SandboxFaults, type SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { createHomePublisher } from '../slack/home.js';
import { AgentSessions } from '../slack/agent-session.js';
import { syncPlanMessage } from '../slack/plan-message.js';
import { createSlackInstaller } from '../slack/oauth.js';
import { createSlackClients, SlackPoster } from '../slack/poster.js';
import { asWorkspaceClients, installedWorkspaceClients, type WorkspaceClients } from '../slack/workspace-clients.js';
import { installationQueryForTeam } from '../store/installations.js';
import { slackPace } from '../slack/limits.js';
import type { DbHandle } from '../store/db.js';
import { assertPortFree } from '../http/port.js';

export interface WorkerRole {
  platform: Platform;
  sandbox: SandboxHandle | undefined;
  worker: WorkerHandle;
  /** Where runs go, for the ready line: the sandbox's engine, 'sandbox', or the platform's URL. */
  platformLabel: string;
  stop(): Promise<void>;
}

/** What a thread shows beside its posts; each is on unless turned off (benchmarks measure what each costs). */
export interface ThreadSurfaces {
  /** The live plan message, posted and rewritten as the steps move. */
  planMessage: boolean;
  /** Its poll of the platform while a step runs (off: it changes only after turns). */
  planPoll: boolean;
  /** The agent session's status (agents.sessions.setStatus). */
  sessionStatus: boolean;
  /** The accuracy chart shared after each verdict. */
  comparisonChart: boolean;
}

export interface WorkerRoleOptions {
  config: Config;
  db: DbHandle;
  databaseUrl: string;
  logger: Logger;
  scrubber: SecretScrubber;
  /** Host the sandbox platform here, on this port (0 = a free one), sending webhooks to this URL; unset = BENCHGEN_API_URL. */
  sandbox?: { port: number; webhookUrl: string; faults?: Partial<SandboxFaults>; seed?: number; startingBalance?: number };
  pollIntervalMs?: number;
  model?: ModelClient;
  /** Schedules the owner's Home refresh after each turn. */
  home: Pick<HomeScheduler, 'refreshAfterTurn'>;
  surfaces?: Partial<ThreadSurfaces>;
}

export async function startWorkerRole(options: WorkerRoleOptions): Promise<WorkerRole> {
  const { config, db, logger, scrubber } = options;
  const surfaces: ThreadSurfaces = { planMessage: true, planPoll: true, sessionStatus: true, comparisonChart: true, ...options.surfaces };
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) => logger.warn({ err: error }, 'shutdown step failed'));
    }
  };
  try {
    let sandbox: SandboxHandle | undefined;
    let platform: Platform;
    if (!options.sandbox) {
      platform = createHttpPlatform({ baseUrl: config.platform.apiUrl!, token: config.platform.apiToken! });
    } else {
      // Next to the bot's port (3001 by default), so the run links already posted in Slack still
      // work after a restart; a free port only when that one is taken.
      const sandboxPort = options.sandbox.port;
      const portFree = sandboxPort === 0 || (await assertPortFree(sandboxPort, '127.0.0.1').then(() => true, () => false));
      if (!portFree) logger.warn({ port: sandboxPort }, `port ${sandboxPort} (PORT + 1) is taken: the sandbox runs on a free port, so its links change at each restart`);
      const inference = inferenceFromConfig(config.engines);
      const training = trainingFromConfig(config.engines, config.dataDir, logger.child({ component: 'trainer' }));
      sandbox = await startSandbox({
        databaseUrl: options.databaseUrl,
        port: portFree ? sandboxPort : 0,
        timeScale: config.platform.sandboxTimeScale,
        webhookUrl: options.sandbox.webhookUrl,
        logger: logger.child({ component: 'sandbox' }),
        ...(config.platform.webhookSecret ? { webhookSecret: config.platform.webhookSecret } : {}),
        ...(options.sandbox.faults ? { faults: options.sandbox.faults } : {}),
        ...(options.sandbox.seed !== undefined ? { seed: options.sandbox.seed } : {}),
        ...(options.sandbox.startingBalance !== undefined ? { startingBalance: options.sandbox.startingBalance } : {}),
        ...(config.engines.benchmarksDir ? { benchmarksDir: config.engines.benchmarksDir } : {}),
        ...(inference ? { inference } : {}),
        ...(training ? { training } : {}),
      });
      const started = sandbox;
      cleanups.push(() => started.stop());
      scrubber.add(sandbox.token, sandbox.webhookSecret);
      platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token });
      logger.info({ url: sandbox.url }, 'sandbox platform started in the worker');
    }

    // Every write uses the token of the workspace it goes to: the one bot token, or each installation's (OAuth mode).
    const oauth = config.slack.oauth;
    const slackClients: WorkspaceClients = oauth
      ? installedWorkspaceClients({
          db: db.db,
          installer: createSlackInstaller({ oauth, db: db.db, logger, apiUrl: config.slack.apiUrl, publicUrl: config.publicUrl }).provider,
          apiUrl: config.slack.apiUrl,
          logger,
          scrubber,
        })
      : asWorkspaceClients(createSlackClients(config.slack.botToken!, config.slack.apiUrl, logger));
    const pace = slackPace(config.slack.paceScale);
    const poster = new SlackPoster(db.db, slackClients, logger, scrubber, pace, { comparisonCharts: surfaces.comparisonChart });
    const home = createHomePublisher({
      db: db.db,
      clients: slackClients,
      logger,
      scrubber,
      getBalance: () => platform.getBalance(),
      caps: config.spending,
    });
    const sessions = new AgentSessions(slackClients, logger, { intervalMs: pace.sessionStatusIntervalMs });
    cleanups.push(async () => sessions.close());
    const tools = createTools();
    const planProgress = createPlanProgress({
      db: db.db,
      logger,
      poll: surfaces.planPoll,
      sync: async (teamId, chatId, chat) => {
        const clients = await slackClients.forTeam(teamId);
        if (!clients) return { outcome: 'uninstalled' };
        return syncPlanMessage({ db: db.db, clients, perWorkspace: slackClients.perWorkspace, platform, logger, scrubber, pace }, teamId, chatId, chat);
      },
    });
    const model = withScrubbedRequests(options.model ?? createModelClient(config.agent), scrubber);
    const turnDeps: TurnDeps = {
      db: db.db,
      config,
      logger,
      model,
      platform,
      sandbox: sandbox !== undefined && sandbox.engine === null,
      engine: sandbox?.engine ?? null,
      poster,
      system: SYSTEM_PROMPT,
      tools,
      toolDefinitions: toolDefinitions(tools),
      onConclude: (trx, chat) => options.home.refreshAfterTurn(trx, chat.team_id, chat.owner_user_id),
      afterTurn: async (chat) => {
        // A turn is what changes a plan (agreed, launched, finished): its message follows.
        if (chat.plan !== null && surfaces.planMessage) await planProgress.afterTurn(chat);
      },
      ...(surfaces.sessionStatus ? { sessions } : {}),
      ...(oauth
        ? {
            workspaceInstalled: async (teamId: string) => (await installationQueryForTeam(db.db, teamId)) !== undefined,
            slackToken: async (teamId: string) => (await slackClients.forTeam(teamId))?.reader.token,
          }
        : {}),
    };
    const worker = await startWorker({
      pool: db.pool,
      db: db.db,
      logger,
      concurrency: config.workerConcurrency,
      staleSeconds: config.workerStaleSeconds,
      ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
      taskList: {
        ...createTaskList({
          turn: turnDeps,
          logger,
          overdueSeconds: config.reconcile.overdueSeconds,
          eventRetryAttempts: config.agent.eventRetryAttempts,
          publishHome: home.publish,
          buttonFeedback: (feedback) => poster.buttonFeedback(feedback),
        }),
        ...planProgress.tasks,
      },
    });
    cleanups.push(() => worker.stop());

    // Every replica schedules the sweep; the job key collapses them into one queued sweep.
    const sweep = scheduleReconcileSweep({
      cron: config.reconcile.cron,
      enqueue: () => worker.utils.addJob(RECONCILE_TASK, {}, { jobKey: 'reconcile', jobKeyMode: 'preserve_run_at', maxAttempts: 1 }),
      logger,
    });
    cleanups.push(() => sweep.stop());
    return {
      platform,
      sandbox,
      worker,
      platformLabel: sandbox ? (sandbox.engine ?? 'sandbox') : config.platform.apiUrl!,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
