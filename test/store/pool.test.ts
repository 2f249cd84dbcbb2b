// A database connection lost while in use (Postgres restarted, backend killed) is an error for the
// query that used it, never an uncaught exception that takes the bot down.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../../src/store/db.js';
import { createTestDatabase } from '../kit/database.js';

let url: string;
let admin: pg.Client;
let handle: DbHandle;
const lost: Error[] = [];
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);

beforeAll(async () => {
  url = await createTestDatabase('pool');
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
  process.on('uncaughtException', onUncaught);
});
afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await admin.end();
});
beforeEach(() => {
  lost.length = 0;
  uncaught.length = 0;
  handle = createDb(url, { max: 2, onError: (error) => lost.push(error) });
});
afterEach(() => handle.close());

const terminate = (pid: number) => admin.query('select pg_terminate_backend($1)', [pid]);
const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('pg pool', () => {
  it("connects through the server's Unix socket given as the URL's host folder", async () => {
    const { rows } = await admin.query<{ dir: string; port: string }>(`select split_part(current_setting('unix_socket_directories'), ',', 1) as dir, current_setting('port') as port`);
    const dir = rows[0]!.dir.trim();
    if (!dir) return void console.info('[pool.test] the server has no Unix socket: nothing to connect to');
    const tcp = new URL(url);
    // The form the configuration takes (src/config.ts): the folder in `host` wins over the URL's host.
    const socketUrl = `postgres://${tcp.username}:${tcp.password}@localhost:${rows[0]!.port}${tcp.pathname}?host=${encodeURIComponent(dir)}`;
    const viaSocket = createDb(socketUrl, { max: 1 });
    try {
      const { rows: seen } = await sql<{ addr: string | null }>`select inet_client_addr()::text as addr`.execute(viaSocket.db);
      // inet_client_addr() is null over a Unix socket.
      expect(seen).toEqual([{ addr: null }]);
    } finally {
      await viaSocket.close();
    }
  });

  it('survives the loss of a connection that is checked out, and reconnects for the next query', async () => {
    const outcome = await handle.db.connection().execute(async (conn) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn);
      await terminate(rows[0]!.pid);
      // Held, idle between two statements, as a transaction waiting on a platform call would be.
      await until(() => lost.length > 0);
      return sql`select 1`.execute(conn).then(
        () => 'ran',
        (error: unknown) => (error as Error).message,
      );
    });
    expect(uncaught).toEqual([]);
    // pg reports the server's FATAL message and then the closed socket.
    expect(lost.length).toBeGreaterThan(0);
    for (const error of lost) expect(error.message).toMatch(/terminat/);
    expect(outcome).toMatch(/not queryable|terminat/);
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
    expect(rows).toEqual([{ one: 1 }]);
  });

  it('reports an idle connection lost once, and reconnects', async () => {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle.db);
    await terminate(rows[0]!.pid);
    await until(() => lost.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(uncaught).toEqual([]);
    expect(lost).toHaveLength(1);
    const again = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle.db);
    expect(again.rows[0]!.pid).not.toBe(rows[0]!.pid);
  });
});
