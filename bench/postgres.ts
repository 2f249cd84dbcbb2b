// The bench's own embedded PostgreSQL, with the CPU time its processes used.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
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
