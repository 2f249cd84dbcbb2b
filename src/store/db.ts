// kysely over a pg pool, and the migrations that run on start.
import { Kysely, Migrator, PostgresDialect, type MigrationResultSet } from 'kysely';
import pg from 'pg';
import { migrations } from '../../migrations/index.js';
import type { Database } from './tables.js';

export type Db = Kysely<Database>;

// bigint ids and counts arrive as strings; keep them strings (ids) rather than lose precision.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

export function createDb(connectionString: string, options: { max?: number; onError?: (error: Error) => void } = {}): DbHandle {
  // Bounded waits: after a database restart no query may hang a turn (or shutdown) for ever; the
  // longest legitimate statement (a migration, a batch ingest, an Activity export) takes seconds.
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 20,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    query_timeout: 30_000,
    keepAlive: true,
  });
  // A dropped connection (Postgres restarted) must not crash the process; the pool reconnects on next use.
  pool.on('error', (error) => options.onError?.(error));
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
