// Composition root: config -> db -> web role (http -> slack) and worker role (platform -> agent -> worker).
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import type { Logger } from 'pino';
import type { ModelClient } from './agent/model.js';
import type { Config } from './config.js';
import { boundHeapGrowth } from './heap.js';
import { WEBHOOK_PATH } from './http/server.js';
import { createHomeScheduler } from './jobs/home-refresh.js';
import { migrateJobEngine, type WorkerHandle } from './jobs/worker.js';
import { createLogger, createScrubber, type SecretScrubber } from './logger.js';
import type { Platform } from '@verdict/contract/platform';
import type { SandboxFaults, SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { assertPortFree } from './http/port.js';
// The roles' modules are imported when a role starts: each process of `npm start` then loads only
// what it runs (the parent neither Bolt nor the agent; the web role not the agent nor the engines).
import type { WebRole } from './roles/web.js';
import type { ThreadSurfaces, WorkerRole } from './roles/worker.js';
import { describeError, redactUrl, StartupError } from '@verdict/runtime/startup-error';
import { createDb, migrateToLatest, type DbHandle } from './store/db.js';
import { embeddedDataDir, embeddedPlaceLine, startEmbeddedPostgres, type EmbeddedDatabase } from '@verdict/runtime/embedded-postgres';

/** Both roles in one process (tests, benches, scripts); `npm start` runs them as separate processes. */
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

/** One role in this process: a child of `npm start`, or a role started alone (ROLE=web or worker). */
export interface RoleProcess {
  role: 'web' | 'worker';
  /** The web role's HTTP URL. */
  url: string | undefined;
  /** The worker role's platform: the sandbox's engine, 'sandbox', or BENCHGEN_API_URL. */
  platform: string | undefined;
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
  /** A role started by the parent of `npm start` (which reports the database itself). */
  supervised?: boolean;
  /** Thread surfaces to leave off (benchmarks only: what each costs is measured by turning it off). */
  surfaces?: Partial<ThreadSurfaces>;
}

interface Started {
  url: string | undefined;
  db: DbHandle;
  logger: Logger;
  web: WebRole | undefined;
  worker: WorkerRole | undefined;
  stop(): Promise<void>;
}

/** Migrations of the app and of the job engine; both are lock-protected, so roles and replicas may run them together. */
export async function migrateDatabase(db: DbHandle, logger: Logger): Promise<void> {
  await migrateToLatest(db.db);
  await migrateJobEngine(db.pool, logger);
}

export function createRootLogger(config: Config, scrubber: SecretScrubber = secretScrubber(config)): Logger {
  return createLogger({ level: config.logLevel, scrubber });
}

/** One scrubber for logs, posts, Home views and model requests; the sandbox's secrets join it once it starts. */
export function secretScrubber(config: Config): SecretScrubber {
  return createScrubber([
    config.slack.botToken,
    config.slack.appToken,
    config.slack.oauth?.clientSecret,
    config.slack.oauth?.stateSecret,
    config.slack.oauth?.tokenKey.toString('hex'),
    config.slack.oauth?.tokenKey.toString('base64'),
    config.slack.signingSecret,
    config.agent.apiKey,
    config.platform.apiToken,
    config.platform.webhookSecret,
  ]);
}

async function start(config: Config, roles: { web: boolean; worker: boolean }, options: BotOptions & { bindings?: Record<string, unknown> }): Promise<Started> {
  boundHeapGrowth();
  const scrubber = secretScrubber(config);
  const root = options.logger ?? createRootLogger(config, scrubber);
  const logger = options.bindings ? root.child(options.bindings) : root;
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) => logger.warn({ err: error }, 'shutdown step failed'));
    }
  };
  try {
    // Before the database starts: a port in use is found in a second, not after a minute of start-up.
    if (roles.web && config.port !== 0) await assertPortFree(config.port, options.host ?? '0.0.0.0');
    if (roles.web && config.platform.apiUrl && !config.publicUrl) {
      logger.warn(
        { platform: config.platform.apiUrl },
        'BENCHGEN_API_URL is set without PUBLIC_URL: no webhook is registered with the platform, so results arrive only through the reconcile sweep (RECONCILE_CRON, after RECONCILE_OVERDUE_SECONDS); set PUBLIC_URL to this bot\'s public base URL to get them at once',
      );
    }
    let databaseUrl = config.databaseUrl;
    let embedded: EmbeddedDatabase | undefined;
    if (!databaseUrl) {
      const place = await embeddedDataDir({ dataRoot: config.dataDir, name: 'postgres', explicit: config.dataDirSet });
      logger.info({ dataDir: place.dataDir }, embeddedPlaceLine(place));
      embedded = await startEmbeddedPostgres({ dataDir: place.dataDir, onLog: (line) => logger.debug({ component: 'postgres' }, line) });
      cleanups.push(() => embedded!.stop());
      databaseUrl = embedded.url;
    }
    const db = createDb(databaseUrl, {
      max: roles.worker ? Math.max(10, config.workerConcurrency + 10) : 10,
      applicationName: roles.web && roles.worker ? 'verdict-bot' : roles.web ? 'verdict-bot web' : 'verdict-bot worker',
      onError: (error) => logger.warn({ err: error }, 'database connection lost; the pool reconnects'),
    });
    cleanups.push(() => db.close());
    // A role under the parent of npm start was given its database: the parent already said which.
    logger[options.supervised ? 'debug' : 'info']({ database: redactUrl(databaseUrl) }, embedded ? 'database: embedded PostgreSQL' : 'database: DATABASE_URL');
    if (!embedded) {
      await db.pool.query('select 1').catch((error: unknown) => {
        throw new StartupError('DATABASE_URL', `cannot connect to the database at ${redactUrl(databaseUrl)} (DATABASE_URL): ${describeError(error)}`, { cause: error });
      });
    }
    await migrateDatabase(db, logger);

    const platformHolder: { secret?: string } = {};
    const jobs: WorkerUtils = await makeWorkerUtils({ pgPool: db.pool });
    cleanups.push(async () => {
      await jobs.release();
    });
    const home = createHomeScheduler(() => jobs);

    let web: WebRole | undefined;
    if (roles.web) {
      const { startWebRole } = await import('./roles/web.js');
      web = await startWebRole({
        config,
        db: db.db,
        logger,
        ...(options.host ? { host: options.host } : {}),
        webhookSecret: () => platformHolder.secret ?? config.platform.webhookSecret ?? '',
        enqueueHome: home.enqueue,
      });
      cleanups.push(() => web!.stop());
    }

    let worker: WorkerRole | undefined;
    if (roles.worker) {
      // The sandbox runs in exactly one place: the worker of npm start (told so by its parent), or
      // the one process that runs both roles; a worker started alone uses BENCHGEN_API_URL.
      const inProcessSandbox =
        !config.platform.apiUrl && roles.web
          ? {
              // Next to the bot's port (3001 by default), so its links survive a restart.
              port: config.port === 0 || config.port === 65535 ? 0 : config.port + 1,
              webhookUrl: `${config.publicUrl?.replace(/\/+$/, '') ?? web!.url}${WEBHOOK_PATH}`,
            }
          : undefined;
      const sandbox = config.sandboxHost ?? inProcessSandbox;
      const { startWorkerRole } = await import('./roles/worker.js');
      worker = await startWorkerRole({
        config,
        db,
        databaseUrl,
        logger,
        scrubber,
        ...(sandbox ? { sandbox: { ...sandbox, ...options.sandbox } } : {}),
        ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
        ...(options.model ? { model: options.model } : {}),
        ...(options.surfaces ? { surfaces: options.surfaces } : {}),
        home,
      });
      cleanups.push(() => worker!.stop());
      if (worker.sandbox) platformHolder.secret = worker.sandbox.webhookSecret;
    }

    if (web) await web.open();
    return { url: web?.url, db, logger, web, worker, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Starts both roles in this process. */
export async function startBot(config: Config, options: BotOptions = {}): Promise<Bot> {
  const started = await start(config, { web: true, worker: true }, options);
  const worker = started.worker!;
  started.logger.info(
    { url: started.url, mode: config.slack.socketMode ? 'socket' : 'http', platform: worker.platformLabel },
    'bot ready',
  );
  return {
    url: started.url!,
    config,
    db: started.db,
    platform: worker.platform,
    sandbox: worker.sandbox,
    worker: worker.worker,
    logger: started.logger,
    stop: started.stop,
  };
}

/** Starts one role in this process (`config.role` is web or worker). */
export async function startRole(config: Config, role: 'web' | 'worker', options: BotOptions = {}): Promise<RoleProcess> {
  const started = await start(config, { web: role === 'web', worker: role === 'worker' }, { ...options, bindings: { role } });
  return {
    role,
    url: started.url,
    platform: started.worker?.platformLabel,
    logger: started.logger,
    stop: started.stop,
  };
}
