// The job engine (graphile-worker): runs turns per chat queue, and unlocks jobs of crashed processes.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  makeWorkerUtils,
  run,
  runMigrations,
  type Logger as GraphileLogger,
  type Runner,
  type TaskList,
  type WorkerEvents,
  type WorkerUtils,
  Logger as GraphileLoggerClass,
} from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import { beat, listSilentLockHolders, pruneHeartbeats } from '../store/worker-heartbeats.js';

export interface WorkerHandle {
  utils: WorkerUtils;
  /** Worker ids of this process, for heartbeats. */
  workerIds(): string[];
  /** Unlocks jobs held by workers whose process stopped heart-beating (crashed); returns their ids. */
  reapDeadWorkers(): Promise<string[]>;
  stop(): Promise<void>;
}

function graphileLogger(logger: Logger): GraphileLogger {
  return new GraphileLoggerClass(() => (level, message, meta) => {
    const child = logger.child({ component: 'graphile-worker' });
    const fields = compactMeta(meta);
    if (level === 'error') child.error(fields, message);
    else if (level === 'warning') child.warn(fields, message);
    else child.debug(fields, message);
  });
}

/**
 * graphile-worker attaches the whole pg client to connection errors (kilobytes of socket and parser
 * state per line, repeated for every connection during an outage); keep what identifies the error.
 */
function compactMeta(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!meta) return {};
  const error = meta.error as { name?: unknown; message?: unknown; code?: unknown; severity?: unknown } | undefined;
  if (!error || typeof error !== 'object') return meta;
  return { ...meta, error: { name: error.name, message: error.message, code: error.code, severity: error.severity } };
}

/** Creates the job engine's schema (idempotent, lock-protected), before any trigger is enqueued. */
export async function migrateJobEngine(pool: pg.Pool, logger: Logger): Promise<void> {
  await runMigrations({ pgPool: pool, logger: graphileLogger(logger) });
}

export async function startWorker(options: {
  pool: pg.Pool;
  db: Db;
  logger: Logger;
  concurrency: number;
  taskList: TaskList;
  /** A process whose heartbeat is older than this is considered dead and its jobs are unlocked. */
  staleSeconds: number;
  pollIntervalMs?: number;
}): Promise<WorkerHandle> {
  const { db, logger } = options;
  const processId = randomUUID();
  const ids = new Set<string>();
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  events.on('worker:create', ({ worker }) => {
    ids.add(worker.workerId);
  });
  events.on('worker:stop', ({ worker }) => {
    ids.delete(worker.workerId);
  });
  const glog = graphileLogger(logger);
  const utils = await makeWorkerUtils({ pgPool: options.pool, logger: glog });

  const heartbeat = () => beat(db, processId, [...ids]);

  const reapDeadWorkers = async (): Promise<string[]> => {
    const dead = (await listSilentLockHolders(db, options.staleSeconds)).filter((id) => !ids.has(id));
    if (dead.length > 0) {
      logger.warn({ workers: dead }, 'unlocking jobs of workers that stopped heart-beating');
      await utils.forceUnlockWorkers(dead);
    }
    await pruneHeartbeats(db);
    return dead;
  };

  const startRunner = () =>
    run({
      pgPool: options.pool,
      concurrency: options.concurrency,
      noHandleSignals: true,
      pollInterval: options.pollIntervalMs ?? 2000,
      taskList: options.taskList,
      events,
      logger: glog,
    });
  let runner: Runner = await startRunner();

  // A graphile-worker 0.16 worker that cannot record a job's end (the database went away at that
  // moment) "commits seppuku": it leaves the pool for good and is never replaced, so every
  // Postgres outage could cost workers until none was left and no turn ran again. When one dies, a
  // fresh runner with the full count takes over and the old one is stopped gracefully (its other
  // workers finish their jobs); the dead worker's job is unlocked by the heartbeat reaper.
  let stopping = false;
  let replacing: Promise<void> | null = null;
  const replaceRunner = (): void => {
    if (stopping || replacing) return;
    replacing = (async () => {
      const old = runner;
      for (let attempt = 0; !stopping; attempt += 1) {
        try {
          // A start that hangs (seen while the database was coming back) is abandoned and retried.
          let timer: NodeJS.Timeout | undefined;
          const starting = startRunner();
          const timedOut = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('the job workers did not start within 20 s')), 20_000);
          });
          runner = await Promise.race([starting, timedOut]).finally(() => clearTimeout(timer)).catch((error: unknown) => {
            // If the abandoned start completes later, stop that runner rather than keep two.
            starting.then((late) => late.stop(), () => undefined).catch(() => undefined);
            throw error;
          });
          logger.warn('job workers replaced after a worker died');
          break;
        } catch (error) {
          logger.warn({ err: error, attempt }, 'could not restart the job workers yet; retrying');
          await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 250 * 2 ** attempt)));
        }
      }
      await old.stop().catch((error: unknown) => logger.warn({ err: error }, 'stopping the old job workers failed'));
    })().finally(() => {
      replacing = null;
    });
  };
  events.on('worker:fatalError', ({ error }) => {
    logger.error({ err: error }, 'a job worker died (its job could not be released); replacing the workers');
    replaceRunner();
  });

  const intervalMs = Math.max(250, Math.floor((options.staleSeconds * 1000) / 3));
  // The beat in flight, which stop() waits for: one still running then failed on the closed pool
  // and logged after the bot had stopped.
  let ticking: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (ticking) return;
    ticking = heartbeat()
      .then(reapDeadWorkers)
      .then(
        () => undefined,
        (error: unknown) => logger.warn({ err: error }, 'worker heartbeat failed'),
      )
      .finally(() => {
        ticking = null;
      });
  }, intervalMs);
  timer.unref();
  await heartbeat().catch(() => undefined);

  return {
    utils,
    workerIds: () => [...ids],
    reapDeadWorkers,
    stop: async () => {
      clearInterval(timer);
      stopping = true;
      await ticking;
      await replacing;
      await runner.stop();
      await utils.release();
    },
  };
}
