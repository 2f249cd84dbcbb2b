// The pg pool both the bot and the platform use: bounded waits, and no crash when Postgres drops a
// connection that is checked out.
import pg from 'pg';

/**
 * A pg pool whose connections can be lost at any moment without taking the process down.
 *
 * pg-pool listens for errors only on idle clients. A client that is checked out (a kysely query or
 * transaction, a job worker, a sandbox transaction) when Postgres restarts emits 'error' with no
 * listener, which Node turns into an uncaught exception: the whole bot died that way in the
 * Postgres-restart scenario. Every client gets a listener for its whole life; the query it was
 * running fails on its own, and pg-pool discards the broken client when it is released.
 */
export function createPgPool(
  config: {
    connectionString: string;
    max: number;
    idleTimeoutMillis?: number;
    /** Shown in pg_stat_activity (which role a backend serves), unless the URL names one. */
    applicationName?: string;
  },
  onError: (error: Error) => void,
): pg.Pool {
  // Bounded waits: after a database restart no connect or query may hang a caller for ever; the
  // longest legitimate statement (a migration, a batch ingest, an Activity export) takes seconds.
  const { applicationName, ...poolConfig } = config;
  const pool = new pg.Pool({
    ...poolConfig,
    ...(applicationName && !/[?&]application_name=/.test(config.connectionString) ? { application_name: applicationName } : {}),
    connectionTimeoutMillis: 10_000,
    query_timeout: 30_000,
    keepAlive: true,
  });
  // Reported once, by the client's own listener below (which also hears idle clients).
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', onError);
  });
  return pool;
}
