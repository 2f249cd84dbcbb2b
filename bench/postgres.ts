// The bench's own embedded PostgreSQL, with the CPU time its processes used.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { EmbeddedDatabase } from '../src/store/embedded-postgres.js';
import { createDatabaseOn, startPrivatePostgres } from '../test/kit/database.js';
import { processCpuMs, statFields } from './cpu.js';

export interface BenchPostgres {
  server: EmbeddedDatabase;
  dir: string;
  /** CPU milliseconds used so far by the Postgres server: postmaster, live backends and reaped ones. */
  cpuMs(): Promise<number>;
  /** A fresh empty database, by URL. */
  createDatabase(prefix: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts this bench's own embedded PostgreSQL in a temporary folder. */
export async function startPostgres(): Promise<BenchPostgres> {
  const postgres = await startPrivatePostgres({ folderPrefix: 'verdict-bench-pg-' });
  const { server, dir } = postgres;
  return {
    server,
    dir,
    cpuMs: async () => {
      const pid = Number((await readFile(path.join(postgres.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      let total = await processCpuMs(pid, true);
      for (const entry of await readdir('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
        if (stat && Number(statFields(stat)[1]) === pid) total += await processCpuMs(Number(entry));
      }
      return total;
    },
    createDatabase: (prefix) => createDatabaseOn(server.url, prefix),
    stop: postgres.stop,
  };
}

/**
 * Diagnostic (BENCH_SAMPLE_WAITS=1): samples what the database's active backends wait on, by role
 * (application_name), wait event ('cpu' when none) and statement, every `everyMs`; `stop()` prints
 * the most frequent. Without the variable it does nothing.
 */
export async function sampleWaits(databaseUrl: string, everyMs = 20): Promise<{ stop(): Promise<void> }> {
  if (process.env.BENCH_SAMPLE_WAITS !== '1') return { stop: async () => undefined };
  const waits: Record<string, number> = {};
  const client = new pg.Client(databaseUrl);
  await client.connect();
  const timer = setInterval(() => {
    void client
      .query<{ w: string }>(
        `select coalesce(application_name, '') || ' | ' || coalesce(wait_event_type || ':' || wait_event, 'cpu') || ' | ' || regexp_replace(left(query, 60), '\\s+', ' ', 'g') as w
         from pg_stat_activity where pid <> pg_backend_pid() and datname = current_database() and state <> 'idle'`,
      )
      .then((res) => res.rows.forEach((row) => (waits[row.w] = (waits[row.w] ?? 0) + 1)))
      .catch(() => undefined);
  }, everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await client.end();
      for (const [what, samples] of Object.entries(waits).sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`    ${samples} x ${what}`);
    },
  };
}
