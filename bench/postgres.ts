// The bench's own embedded PostgreSQL, with the CPU time its processes used.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@verdict/runtime/embedded-postgres';
import { createDatabaseOn, startPrivatePostgres } from '../test/kit/database.js';
import { processCpuMs } from './cpu.js';
import { statFields } from '../test/kit/proc.js';

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
  const { dir } = postgres;
  let server = postgres.server;
  if (['1', 'calls'].includes(process.env.BENCH_PG_STATEMENTS ?? '')) {
    // The extension must be preloaded: set it, then restart the server on the same data and port.
    const client = new pg.Client(server.url);
    await client.connect();
    await client.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
    await client.end();
    await server.stop();
    server = await startEmbeddedPostgres({ dataDir: postgres.dataDir, port: server.port });
    const admin = new pg.Client(server.url);
    await admin.connect();
    await admin.query('create extension if not exists pg_stat_statements');
    await admin.end();
  }
  const settings = process.env.BENCH_PG_SET?.split(',').filter(Boolean) ?? [];
  if (settings.length > 0) {
    // Diagnostic: server settings for the run, e.g. BENCH_PG_SET=fsync=off (what the disk's flushes
    // cost; never a setting for a bot: a crash then loses commits). Only settings a reload applies.
    const client = new pg.Client(server.url);
    await client.connect();
    for (const setting of settings) {
      const [name, ...value] = setting.split('=');
      if (!/^[a-z_]+$/.test(name!)) throw new Error(`BENCH_PG_SET: not a setting name: ${name}`);
      await client.query(`alter system set ${name} = '${value.join('=').replace(/'/g, "''")}'`);
    }
    await client.query('select pg_reload_conf()');
    const shown = [];
    for (const setting of settings) {
      const name = setting.split('=')[0]!;
      shown.push(`${name} = ${(await client.query<Record<string, string>>(`show ${name}`)).rows[0]![name]}`);
    }
    console.log(`  BENCH_PG_SET: the bench's Postgres runs with ${shown.join(', ')}`);
    await client.end();
  }
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
    stop: async () => {
      if (server !== postgres.server) await server.stop().catch(() => undefined);
      await postgres.stop();
    },
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

/**
 * Diagnostic (BENCH_PG_STATEMENTS=1 or calls, set before `startPostgres`): prints the statements run on
 * `databaseUrl`'s database, most calls first, as calls per `per` (e.g. per turn) and total time.
 */
export async function printStatements(adminUrl: string, databaseUrl: string, per: number, top = Number(process.env.BENCH_PG_STATEMENTS_TOP ?? 40)): Promise<void> {
  // BENCH_PG_STATEMENTS=1: the costliest statements first; =calls: the most frequent first.
  const order = { '1': 's.total_exec_time', calls: 's.calls' }[process.env.BENCH_PG_STATEMENTS ?? ''];
  if (!order) return;
  const name = new URL(databaseUrl).pathname.slice(1);
  const client = new pg.Client(adminUrl);
  await client.connect();
  try {
    const rows = (
      await client.query<{ calls: string; ms: number; query: string }>(
        `select s.calls::text, s.total_exec_time as ms, regexp_replace(left(s.query, 140), '\\s+', ' ', 'g') as query
           from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1 order by ${order} desc limit $2`,
        [name, top],
      )
    ).rows;
    const commits = (await client.query<{ commits: string }>('select xact_commit::text as commits from pg_stat_database where datname = $1', [name])).rows[0]!.commits;
    const statements = (await client.query<{ calls: string }>('select coalesce(sum(s.calls), 0)::text as calls from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1', [name])).rows[0]!.calls;
    console.log(`    transactions committed on ${name} per unit: ${(Number(commits) / per).toFixed(2)}; statements per unit: ${(Number(statements) / per).toFixed(2)}`);
    console.log(`    statements on ${name}, calls per unit (${per} units) / total ms, ${order === 's.calls' ? 'the most frequent' : 'the costliest'} first:`);
    for (const row of rows) console.log(`    ${(Number(row.calls) / per).toFixed(2).padStart(8)} ${row.ms.toFixed(0).padStart(7)} ms  ${row.query}`);
  } finally {
    await client.end();
  }
}
