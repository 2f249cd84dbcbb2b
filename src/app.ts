// Composition root: config -> db -> platform -> agent -> slack -> worker -> http.
import { createServer } from 'node:net';
import path from 'node:path';
import cron from 'node-cron';
import type { Logger } from 'pino';
import { createModelClient, withScrubbedRequests, type ModelClient } from './agent/model.js';
import { SYSTEM_PROMPT } from './agent/system-prompt.js';
import { createTools } from './agent/tools/index.js';
import { toolDefinitions } from './agent/tools/tool.js';
import type { TurnDeps } from './agent/turn.js';
import type { Config } from './config.js';
import { sendJson, startHttpServer, WEBHOOK_PATH } from './http/server.js';
import { createWebhookRoute } from './http/webhook-route.js';
import { createHomeScheduler } from './jobs/home-refresh.js';
import { RECONCILE_TASK } from './jobs/task-names.js';
import { createTaskList } from './jobs/tasks.js';
import { migrateJobEngine, startWorker, type WorkerHandle } from './jobs/worker.js';
import { createLogger, createScrubber } from './logger.js';
import { inferenceFromConfig } from './platform/engines/engine-setup.js';
import { trainingFromConfig } from './platform/engines/training-setup.js';
import { createHttpPlatform } from './platform/http-client.js';
import type { Platform } from './platform/platform.js';
import { startSandbox, type SandboxFaults, type SandboxHandle } from './platform/sandbox/sandbox.js';
import { createSlackApp, type SlackApp } from './slack/app.js';
import { createHomePublisher } from './slack/home.js';
import { createSlackClients, SlackPoster } from './slack/poster.js';
import { describeError, redactUrl, StartupError } from './startup-error.js';
import { createDb, migrateToLatest, type DbHandle } from './store/db.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './store/embedded-postgres.js';

export interface Bot {
  url: string;
  config: Config;
  db: DbHandle;
  platform: Platform;
  sandbox: SandboxHandle | undefined;
  worker: WorkerHandle;
  logger: Logger;
  stop(): Promise<void>;
}

export interface BotOptions {
  logger?: Logger;
  /** Host to listen on (default all interfaces). */
  host?: string;
  /** Worker poll interval; LISTEN/NOTIFY wakes workers at once, polling only covers missed notifications. */
  pollIntervalMs?: number;
  /** Replaces the Messages API client (benchmarks only; tests use ANTHROPIC_BASE_URL). */
  model?: ModelClient;
  /** Extra settings for the in-process sandbox platform. */
  sandbox?: { faults?: Partial<SandboxFaults>; seed?: number; startingBalance?: number };
}

function portError(port: number, error: unknown): Error {
  const code = (error as { code?: string }).code;
  if (code === 'EADDRINUSE') return new StartupError('PORT', `PORT ${port} is already in use: stop what listens there or set PORT to a free port`, { cause: error });
  if (code === 'EACCES') return new StartupError('PORT', `PORT ${port} needs privileges this process lacks: set PORT above 1023`, { cause: error });
  return error instanceof Error ? error : new Error(describeError(error));
}

/** Fails with a {@link StartupError} naming PORT when nothing can listen on it. */
async function assertPortFree(port: number, host: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error) => reject(portError(port, error)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

export async function startBot(config: Config, options: BotOptions = {}): Promise<Bot> {
  // One scrubber for logs, posts, Home views and model requests; the sandbox's secrets join it once it starts.
  const scrubber = createScrubber([
    config.slack.botToken,
    config.slack.appToken,
    config.slack.signingSecret,
    config.agent.apiKey,
    config.platform.apiToken,
    config.platform.webhookSecret,
  ]);
  const logger = options.logger ?? createLogger({ level: config.logLevel, scrubber });
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) => logger.warn({ err: error }, 'shutdown step failed'));
    }
  };
  try {
    // Before the database starts: a port in use is found in a second, not after a minute of start-up.
    if (config.port !== 0) await assertPortFree(config.port, options.host ?? '0.0.0.0');
    if (config.platform.apiUrl && !config.publicUrl) {
      logger.warn(
        { platform: config.platform.apiUrl },
        'BENCHGEN_API_URL is set without PUBLIC_URL: no webhook is registered with the platform, so results arrive only through the reconcile sweep (RECONCILE_CRON, after RECONCILE_OVERDUE_SECONDS); set PUBLIC_URL to this bot\'s public base URL to get them at once',
      );
    }
    let databaseUrl = config.databaseUrl;
    let embedded: EmbeddedDatabase | undefined;
    if (!databaseUrl) {
      const dataDir = path.resolve(config.dataDir, 'postgres');
      logger.info({ dataDir }, 'no DATABASE_URL: starting embedded PostgreSQL');
      embedded = await startEmbeddedPostgres({ dataDir, onLog: (line) => logger.debug({ component: 'postgres' }, line) });
      cleanups.push(() => embedded!.stop());
      databaseUrl = embedded.url;
    }
    const db = createDb(databaseUrl, {
      max: Math.max(10, config.workerConcurrency + 10),
      onError: (error) => logger.warn({ err: error }, 'database connection lost; the pool reconnects'),
    });
    cleanups.push(() => db.close());
    logger.info({ database: redactUrl(databaseUrl) }, embedded ? 'database: embedded PostgreSQL' : 'database: DATABASE_URL');
    if (!embedded) {
      await db.pool.query('select 1').catch((error: unknown) => {
        throw new StartupError('DATABASE_URL', `cannot connect to the database at ${redactUrl(databaseUrl)} (DATABASE_URL): ${describeError(error)}`, { cause: error });
      });
    }
    await migrateToLatest(db.db);
    await migrateJobEngine(db.pool, logger);

    const slackClients = createSlackClients(config.slack.botToken, config.slack.apiUrl, logger);
    const poster = new SlackPoster(db.db, slackClients, logger, scrubber);
    const platformHolder: { platform?: Platform; secret?: string } = {};
    const home = createHomePublisher({
      db: db.db,
      clients: slackClients,
      logger,
      scrubber,
      getBalance: () => platformHolder.platform?.getBalance() ?? Promise.resolve(null),
      caps: config.spending,
    });

    let workerHandle: WorkerHandle | undefined;
    const homeJobs = createHomeScheduler(() => workerHandle?.utils);

    // The HTTP server comes up before Slack is verified, so /healthz answers (503, "starting")
    // during the rest of start-up; Slack's requests wait for the app (503: Slack redelivers).
    let slack: SlackApp | undefined;
    let ready = false;
    const webhook = createWebhookRoute({
      db: db.db,
      logger,
      get secret() {
        return platformHolder.secret ?? '';
      },
      eventRetryAttempts: config.agent.eventRetryAttempts,
    });
    const http = await startHttpServer({
      db: db.db,
      logger,
      port: config.port,
      ...(options.host ? { host: options.host } : {}),
      slack: config.slack.socketMode
        ? undefined
        : (req, res) => (slack?.requestListener ? slack.requestListener(req, res) : sendJson(res, 503, { error: 'starting, retry later' })),
      webhook,
      starting: () => !ready,
      ...(config.slack.socketMode ? { socketState: () => slack?.socketState() ?? 'connecting' } : {}),
    }).catch((error: unknown) => {
      throw portError(config.port, error);
    });
    cleanups.push(() => http.close());
    slack = await createSlackApp(config, { db: db.db, logger, enqueueHome: homeJobs.enqueue, adminUserIds: config.spending.adminUserIds });
    const slackApp = slack;

    let sandbox: SandboxHandle | undefined;
    let platform: Platform;
    const webhookUrl = `${config.publicUrl?.replace(/\/+$/, '') ?? http.url}${WEBHOOK_PATH}`;
    if (config.platform.apiUrl) {
      platform = createHttpPlatform({ baseUrl: config.platform.apiUrl, token: config.platform.apiToken! });
      platformHolder.secret = config.platform.webhookSecret!;
      if (config.publicUrl) {
        await platform
          .registerWebhook(webhookUrl)
          .catch((error: unknown) => logger.warn({ err: error }, 'could not register the webhook URL with the platform'));
      }
    } else {
      // Next to the bot's port (3001 by default), so the run links already posted in Slack still
      // work after a restart; a free port only when that one is taken.
      const sandboxPort = config.port === 0 || config.port === 65535 ? 0 : config.port + 1;
      const portFree = sandboxPort === 0 || (await assertPortFree(sandboxPort, '127.0.0.1').then(() => true, () => false));
      if (!portFree) logger.warn({ port: sandboxPort }, `port ${sandboxPort} (PORT + 1) is taken: the sandbox runs on a free port, so its links change at each restart`);
      const inference = inferenceFromConfig(config.engines);
      const training = trainingFromConfig(config.engines, config.dataDir, logger.child({ component: 'trainer' }));
      sandbox = await startSandbox({
        databaseUrl,
        port: portFree ? sandboxPort : 0,
        timeScale: config.platform.sandboxTimeScale,
        webhookUrl,
        logger: logger.child({ component: 'sandbox' }),
        ...(config.platform.webhookSecret ? { webhookSecret: config.platform.webhookSecret } : {}),
        ...(options.sandbox?.faults ? { faults: options.sandbox.faults } : {}),
        ...(options.sandbox?.seed !== undefined ? { seed: options.sandbox.seed } : {}),
        ...(options.sandbox?.startingBalance !== undefined ? { startingBalance: options.sandbox.startingBalance } : {}),
        ...(config.engines.benchmarksDir ? { benchmarksDir: config.engines.benchmarksDir } : {}),
        ...(inference ? { inference } : {}),
        ...(training ? { training } : {}),
      });
      cleanups.push(() => sandbox!.stop());
      scrubber.add(sandbox.token, sandbox.webhookSecret);
      platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token });
      platformHolder.secret = sandbox.webhookSecret;
      logger.info({ url: sandbox.url }, 'sandbox platform started in-process');
    }
    platformHolder.platform = platform;

    const tools = createTools();
    const turnDeps: TurnDeps = {
      db: db.db,
      config,
      logger,
      model: withScrubbedRequests(options.model ?? createModelClient(config.agent), scrubber),
      platform,
      sandbox: sandbox !== undefined && sandbox.engine === null,
      engine: sandbox?.engine ?? null,
      poster,
      system: SYSTEM_PROMPT,
      tools,
      toolDefinitions: toolDefinitions(tools),
      afterTurn: (chat) => homeJobs.refreshAfterTurn(chat.team_id, chat.owner_user_id),
    };
    workerHandle = await startWorker({
      pool: db.pool,
      db: db.db,
      logger,
      concurrency: config.workerConcurrency,
      staleSeconds: config.workerStaleSeconds,
      ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
      taskList: createTaskList({
        turn: turnDeps,
        logger,
        overdueSeconds: config.reconcile.overdueSeconds,
        eventRetryAttempts: config.agent.eventRetryAttempts,
        publishHome: home.publish,
        buttonFeedback: (feedback) => poster.buttonFeedback(feedback),
      }),
    });
    cleanups.push(() => workerHandle!.stop());

    // Every replica schedules the sweep; the job key collapses them into one queued sweep.
    const sweep = cron.schedule(config.reconcile.cron, () => {
      workerHandle!.utils
        .addJob(RECONCILE_TASK, {}, { jobKey: 'reconcile', jobKeyMode: 'preserve_run_at', maxAttempts: 1 })
        .catch((error: unknown) => logger.warn({ err: error }, 'could not schedule the reconcile sweep'));
    });
    cleanups.push(async () => {
      await sweep.stop();
    });

    await slackApp.start();
    cleanups.push(() => slackApp.stop());
    ready = true;
    logger.info(
      { url: http.url, mode: config.slack.socketMode ? 'socket' : 'http', platform: sandbox ? (sandbox.engine ?? 'sandbox') : config.platform.apiUrl },
      'bot ready',
    );
    return { url: http.url, config, db, platform, sandbox, worker: workerHandle, logger, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
