// The acknowledged write of one Slack event on its own: the web role's ingest (the chat upserted,
// the trigger and its turn job written, one statement, one durable commit) against the floor's
// one-row INSERT, called one after another on one connection of a quiet private server. What the
// ack bench (bench/slack-ack.ts) cannot separate from the HTTP and scheduling around it.
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import pg from 'pg';
import { migrateDatabase } from '../src/app.js';
import { createDb } from '../src/store/db.js';
import { enqueueSlackTriggers } from '../src/store/triggers.js';
import { envNumber, fmt, isMain, quantile, report } from './stats.js';
import { startPostgres } from './postgres.js';

const CALLS = envNumber('BENCH_INGEST_STATEMENT_CALLS', 600);
const ROUNDS = envNumber('BENCH_INGEST_STATEMENT_ROUNDS', 3);
const TEAM = 'T0BENCH';

async function timed(calls: number, fn: (i: number) => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < calls; i += 1) {
    const start = performance.now();
    await fn(i);
    ms.push(performance.now() - start);
  }
  return { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99) };
}

export async function main(): Promise<void> {
  console.log(`ingest-statement: ${ROUNDS} rounds of ${CALLS} sequential calls on one connection, each a new thread's mention`);
  const postgres = await startPostgres();
  try {
    const url = await postgres.createDatabase('ingest');
    const handle = createDb(url, { max: 1 });
    await migrateDatabase(handle, pino({ level: 'warn' }));
    const floor = new pg.Client(await postgres.createDatabase('floor'));
    await floor.connect();
    await floor.query('create table bench_ack_floor (event_id text primary key, event jsonb not null)');
    const prefix = randomBytes(3).toString('hex');
    const ingest: number[] = [];
    const floors: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const tag = `${prefix}${round}`;
      const bot = await timed(CALLS, (i) =>
        enqueueSlackTriggers(
          handle.db,
          [
            {
              target: { create: true, channelId: 'C0BENCH', threadTs: `${tag}.${i}`, ownerUserId: 'U0BENCH' },
              input: { teamId: TEAM, kind: 'mention', dedupeKey: `msg:C0BENCH:${tag}.${i}`, userId: 'U0BENCH', payload: { text: '<@UBOT> hello', ts: `${tag}.${i}` } },
            },
          ],
        ),
      );
      const bare = await timed(CALLS, (i) =>
        floor.query('insert into bench_ack_floor (event_id, event) values ($1, $2) on conflict do nothing', [`Ev${tag}${i}`, JSON.stringify({ text: '<@UBOT> hello', ts: `${tag}.${i}` })]),
      );
      ingest.push(bot.p50);
      floors.push(bare.p50);
      console.log(`  round ${round + 1}: ingest p50 ${fmt(bot.p50, 3)} p99 ${fmt(bot.p99, 3)} ms; floor INSERT p50 ${fmt(bare.p50, 3)} p99 ${fmt(bare.p99, 3)} ms`);
    }
    await floor.end();
    await handle.close();
    report('ingest statement p50 (median of rounds)', `${fmt(quantile(ingest, 0.5), 3)} ms; floor INSERT ${fmt(quantile(floors, 0.5), 3)} ms`);
  } finally {
    await postgres.stop();
  }
}

if (isMain(import.meta.url)) await main();
