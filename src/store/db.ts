// kysely over a pg pool, and the migrations that run on start.
import { Kysely, Migrator, PostgresDialect, sql, type MigrationResultSet, type RawBuilder } from 'kysely';
import pg from 'pg';
import { migrations } from '../../migrations/index.js';
import { createPgPool } from '@verdict/runtime/pool';
import { followProcessPriority } from '../priority.js';
import type { Database } from './tables.js';

export type Db = Kysely<Database>;

// bigint ids and counts arrive as strings; keep them strings (ids) rather than lose precision.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

export function createDb(
  connectionString: string,
  options: { max?: number; onError?: (error: Error) => void; applicationName?: string } = {},
): DbHandle {
  const pool = createPgPool(
    {
      connectionString,
      max: options.max ?? 20,
      idleTimeoutMillis: 30_000,
      ...(options.applicationName ? { applicationName: options.applicationName } : {}),
      // A niced process (the worker role of npm start) does its database work at its own priority
      // too, when Postgres runs on this machine: its queries then never outrank the web role's acks.
      onBackend: followProcessPriority,
    },
    (error) => options.onError?.(error),
  );
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    pool,
    close: async () => {
      await db.destroy();
    },
  };
}

/**
 * Applies pending migrations. kysely takes a Postgres advisory lock around the run, so replicas
 * starting together apply each migration once.
 */
export async function migrateToLatest(db: Db): Promise<MigrationResultSet> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
  });
  const result = await migrator.migrateToLatest();
  if (result.error) throw result.error instanceof Error ? result.error : new Error(String(result.error));
  return result;
}

/** Whether the database answers a trivial query within `timeoutMs` (for health checks). */
export async function pingDatabase(db: Db, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`select 1`.execute(db),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
        timer.unref();
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `fn` in a transaction that commits without waiting for its WAL to reach the disk
 * (`synchronous_commit = off` for this transaction alone). For the worker's writes whose loss in a
 * database crash is a state the bot already recovers from, as after a worker killed just before
 * them: pacing slots, a turn's start and its conclusion, a delivered post's ts and permalink, the
 * live plan's last write. Never for a write that must be durable before an effect outside the
 * database (a post attempt, a launch, a model call's cost): those commit synchronously, and their
 * flush carries every relaxed commit before them to the disk too (the WAL is written in order), so
 * a crash can only lose the relaxed tail after the last durable commit. Visibility is not relaxed:
 * other sessions see the write at once. Fewer flushes leave the WAL to the web role's acks
 * (docs/performance.md). Inside a caller's transaction, the caller decides.
 */
export async function relaxedCommit<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db);
  return db.transaction().execute(async (trx) => {
    await sql`set local synchronous_commit = off`.execute(trx);
    return fn(trx);
  });
}

/**
 * The relaxed commit of `relaxedCommit` for a single statement, in one round trip: a FROM item that
 * turns `synchronous_commit` off for the statement's own transaction, for a statement sent on its
 * own. For the pacing reservations, whose row lock concurrent posters wait on and whose answer is a
 * wait timed from the statement: begin, set and commit around them would hold the lock for three
 * more round trips and make the poster late for its own slot. Inside a caller's transaction the
 * setting would outlive the statement, so there it is a plain one-row FROM item: the caller decides.
 */
export function relaxedCommitFrom(db: Db): RawBuilder<unknown> {
  return db.isTransaction ? sql`(select 1) as durable` : sql`(select set_config('synchronous_commit', 'off', true)) as relaxed`;
}
