// kysely over a pg pool, and the migrations that run on start.
import { Kysely, Migrator, PostgresDialect, sql, type MigrationResultSet } from 'kysely';
import pg from 'pg';
import { migrations } from '../../migrations/index.js';
import { createPgPool } from '@verdict/runtime/pool';
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
