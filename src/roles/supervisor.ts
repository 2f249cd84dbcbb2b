// The parent of `npm start`: one PostgreSQL for both roles, the web and worker roles as child processes
// (the worker at a lower scheduling priority), a role that dies restarted with backoff, and an ordered stop.
import { fork, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Logger } from 'pino';
import { migrateDatabase } from '../app.js';
import { SANDBOX_HOST_ENV, type Config } from '../config.js';
import { WEBHOOK_PATH } from '../http/server.js';
import { generateWebhookSecret } from '@verdict/contract/webhooks';
import { describeError, redactUrl, StartupError } from '@verdict/runtime/startup-error';
import { createDb } from '../store/db.js';
import { freePort, embeddedDataDir, embeddedPlaceLine, startEmbeddedPostgres, type EmbeddedDatabase } from '@verdict/runtime/embedded-postgres';
import { assertPortFree } from '../http/port.js';

/** What a role process tells its parent over IPC. */
export type RoleMessage =
  | { type: 'ready'; url?: string; mode?: string; platform?: string }
  | { type: 'failed'; message: string; exitCode: number };

/** Set by the parent on its role processes (its own pid), so a role knows it is supervised. Not a user setting. */
export const PARENT_PID_ENV = 'VERDICT_PARENT_PID';

/**
 * How much lower the worker runs than the parent (nice levels, capped at 19): it is started through
 * `nice -n`, so its threads and what it starts (the sandbox's llama.cpp engine, the trainer) inherit
 * it. An ordinary nice value, no privilege needed; the web role keeps the parent's priority.
 */
export const WORKER_NICENESS = 10;
/** First and longest wait before restarting a role that died; the wait doubles while it keeps dying. */
export const RESTART_BACKOFF_MS = { first: 1000, max: 30_000 } as const;
/** A role that stayed up this long starts its backoff again from the first wait. */
const STABLE_MS = 60_000;
/** How long a role gets to stop before it is killed: the web stops accepting at once, a worker finishes its jobs. */
const STOP_TIMEOUT_MS = { web: 30_000, worker: 60_000 } as const;

export interface Supervisor {
  url: string;
  stop(): Promise<void>;
}

type RoleName = 'web' | 'worker';

interface RoleChild {
  role: RoleName;
  child: ChildProcess | undefined;
  /** Consecutive quick deaths, for the backoff. */
  failures: number;
  timer: NodeJS.Timeout | undefined;
  ready: RoleMessage & { type: 'ready' };
}

/**
 * Starts a role process and resolves with its ready message; rejects with its start-up failure (or
 * its exit) when it does not get ready. `onExit` is called when the process ends, whenever that is.
 */
function spawnRole(
  entry: string,
  role: RoleName,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  onExit: (child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) => void,
): { child: ChildProcess; ready: Promise<RoleMessage & { type: 'ready' }> } {
  // Its own process group: a terminal's Ctrl-C reaches only the parent, which stops the roles in order.
  const options = { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] as StdioOptions, detached: true };
  // `nice` execs node in place (same pid, same IPC channel), so every thread node starts is at the lower priority.
  const child =
    role === 'worker'
      ? spawn('nice', ['-n', String(WORKER_NICENESS), process.execPath, ...process.execArgv, entry], options)
      : fork(entry, [], { ...options, execArgv: process.execArgv });
  const ready = new Promise<RoleMessage & { type: 'ready' }>((resolve, reject) => {
    child.on('message', (raw) => {
      const message = raw as RoleMessage;
      if (message.type === 'ready') resolve(message);
      else if (message.type === 'failed') reject(Object.assign(new Error(message.message), { exitCode: message.exitCode }));
    });
    child.once('error', (error) => reject(new Error(`cannot start the ${role} role: ${describeError(error)}`)));
    child.once('exit', (code, signal) => {
      reject(new Error(`the ${role} role exited during start-up (${signal ?? `exit code ${code}`})`));
      onExit(child, code, signal);
    });
  });
  ready.catch(() => undefined);
  return { child, ready };
}

async function stopChild(child: ChildProcess | undefined, timeoutMs: number): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await gone;
  clearTimeout(timer);
}

/**
 * Starts what both roles share (the embedded PostgreSQL when there is no DATABASE_URL, the
 * migrations), then the web and worker roles as child processes of `entry` (this program). With no
 * BENCHGEN_API_URL the worker child hosts the sandbox platform, on PORT+1, sending its webhooks to
 * the web child; both get the same webhook secret.
 */
export async function startSupervisor(config: Config, options: { entry: string; env: NodeJS.ProcessEnv; logger: Logger }): Promise<Supervisor> {
  const { logger } = options;
  let embedded: EmbeddedDatabase | undefined;
  const children: Record<RoleName, RoleChild | undefined> = { web: undefined, worker: undefined };
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    for (const role of ['web', 'worker'] as const) {
      const entry = children[role];
      if (entry?.timer) clearTimeout(entry.timer);
      await stopChild(entry?.child, STOP_TIMEOUT_MS[role]);
    }
    await embedded?.stop();
  };
  try {
    if (config.port !== 0) await assertPortFree(config.port, '0.0.0.0');
    // The worker must know the web role's address (the sandbox's webhooks go there) before either listens.
    const port = config.port === 0 ? await freePort() : config.port;

    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const place = await embeddedDataDir({ dataRoot: config.dataDir, name: 'postgres', explicit: config.dataDirSet });
      logger.info({ dataDir: place.dataDir }, embeddedPlaceLine(place));
      embedded = await startEmbeddedPostgres({ dataDir: place.dataDir, onLog: (line) => logger.debug({ component: 'postgres' }, line) });
      databaseUrl = embedded.url;
    }
    logger.info({ database: redactUrl(databaseUrl) }, embedded ? 'database: embedded PostgreSQL' : 'database: DATABASE_URL');
    // Checked and migrated once here, so a database problem is one line, not one per role.
    const db = createDb(databaseUrl, { max: 2, onError: () => undefined });
    try {
      if (!embedded) {
        await db.pool.query('select 1').catch((error: unknown) => {
          throw new StartupError('DATABASE_URL', `cannot connect to the database at ${redactUrl(databaseUrl)} (DATABASE_URL): ${describeError(error)}`, { cause: error });
        });
      }
      await migrateDatabase(db, logger);
    } finally {
      await db.close();
    }

    const shared: NodeJS.ProcessEnv = { ...options.env, DATABASE_URL: databaseUrl, PORT: String(port), [PARENT_PID_ENV]: String(process.pid) };
    delete shared[SANDBOX_HOST_ENV];
    if (!config.platform.apiUrl) {
      // One secret for the sandbox (in the worker) that signs and the web role that verifies.
      shared.BENCHGEN_WEBHOOK_SECRET = config.platform.webhookSecret ?? generateWebhookSecret();
    }
    const envs: Record<RoleName, NodeJS.ProcessEnv> = {
      web: { ...shared, ROLE: 'web' },
      worker: {
        ...shared,
        ROLE: 'worker',
        ...(config.platform.apiUrl
          ? {}
          : {
              [SANDBOX_HOST_ENV]: JSON.stringify({
                port: config.port === 0 || config.port === 65535 ? 0 : config.port + 1,
                webhookUrl: `${config.publicUrl?.replace(/\/+$/, '') ?? `http://127.0.0.1:${port}`}${WEBHOOK_PATH}`,
              }),
            }),
      },
    };

    let supervising = false;
    let failStart: (error: Error) => void = () => undefined;
    const startFailed = new Promise<never>((_, reject) => {
      failStart = reject;
    });
    startFailed.catch(() => undefined);

    const launch = (entry: RoleChild) => {
      const spawnedAt = Date.now();
      const spawned = spawnRole(options.entry, entry.role, envs[entry.role], logger, (child, code, signal) => {
        if (stopping || entry.child !== child) return;
        entry.child = undefined;
        const how = signal ?? `exit code ${code}`;
        // During the first start a role that ends stops everything (the caller reports why) instead of being restarted.
        if (!supervising) return failStart(new Error(`the ${entry.role} role exited during start-up (${how})`));
        if (Date.now() - spawnedAt > STABLE_MS) entry.failures = 0;
        const delay = Math.min(RESTART_BACKOFF_MS.max, RESTART_BACKOFF_MS.first * 2 ** entry.failures);
        entry.failures += 1;
        logger.warn(
          { role: entry.role, rolePid: child.pid, code, signal },
          `the ${entry.role} role exited (${how}); restarting it in ${delay} ms${entry.role === 'worker' ? ' (the web role keeps acknowledging)' : ''}`,
        );
        entry.timer = setTimeout(() => {
          entry.timer = undefined;
          if (stopping) return;
          launch(entry).then(
            (child) => logger.info({ role: entry.role, rolePid: child.pid }, `${entry.role} role restarted`),
            (error: unknown) => logger.warn({ role: entry.role, err: error }, `the ${entry.role} role could not start again`),
          );
        }, delay);
      });
      entry.child = spawned.child;
      return spawned.ready.then((ready) => {
        entry.ready = ready;
        return spawned.child;
      });
    };

    for (const role of ['web', 'worker'] as const) children[role] = { role, child: undefined, failures: 0, timer: undefined, ready: { type: 'ready' } };
    await Promise.race([Promise.all([launch(children.web!), launch(children.worker!)]), startFailed]);
    supervising = true;
    logger.info(
      {
        url: `http://127.0.0.1:${port}`,
        mode: children.web!.ready.mode,
        platform: children.worker!.ready.platform,
        pids: { web: children.web!.child?.pid, worker: children.worker!.child?.pid },
      },
      'bot ready',
    );
    return { url: `http://127.0.0.1:${port}`, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
