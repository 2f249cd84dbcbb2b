// Databases for tests, scenarios and benches: a fresh empty database on a server, a private embedded server.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { reachableTempDir, startEmbeddedPostgres, type EmbeddedDatabase } from '@verdict/runtime/embedded-postgres';

/** Makes a fresh empty database and returns its URL. */
export type NewDatabase = () => Promise<string>;

/** Creates an empty database on the server of `adminUrl` and returns its connection URL. */
export async function createDatabaseOn(adminUrl: string, prefix = 't'): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client(adminUrl);
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Creates an empty database on the embedded server that vitest's global setup started. Only inside
 * vitest: vitest is imported when called, so chaos scripts and benches can import this module.
 */
export async function createTestDatabase(prefix = 't'): Promise<string> {
  const { inject } = await import('vitest');
  return createDatabaseOn(inject('pgAdminUrl'), prefix);
}

export interface PrivatePostgres {
  server: EmbeddedDatabase;
  /** The temporary folder; the data directory is `<dir>/data`. */
  dir: string;
  dataDir: string;
  newDatabase: NewDatabase;
  /** Stops the server started here and removes its folder. */
  stop(): Promise<void>;
}

/** A private embedded PostgreSQL server in a temporary folder (the test run's, a chaos script's, a bench's). */
export async function startPrivatePostgres(options: { port?: number; folderPrefix?: string; databasePrefix?: string } = {}): Promise<PrivatePostgres> {
  // Postgres runs as its own user when this runs as root; it must be able to enter the folder.
  const dir = await mkdtemp(path.join(reachableTempDir(), options.folderPrefix ?? 'verdict-chaos-pg-'));
  await chmod(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const server = await startEmbeddedPostgres({ dataDir, ...(options.port ? { port: options.port } : {}) });
  return {
    server,
    dir,
    dataDir,
    newDatabase: () => createDatabaseOn(server.url, options.databasePrefix ?? 'chaos'),
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
