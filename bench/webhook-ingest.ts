// Sustained platform webhook ingest (verify, dedupe, enqueue) on embedded Postgres, with duplicates,
// into the bot as npm start runs it (web and worker roles), with the turns those webhooks start running.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { generateWebhookSecret, webhookHeaders } from '@verdict/contract/webhooks';
import { startRemoteFakes } from './remote-fakes.js';
import { botEnv, spawnMain, TEAM } from './bot.js';
import { envNumber, fmt, isMain, median, quantile, report } from './stats.js';
import { keepAliveAgent, post } from './load.js';
import { sampleWaits, startPostgres } from './postgres.js';

const SECONDS = envNumber('BENCH_INGEST_SECONDS', 15);
const CONCURRENCY = envNumber('BENCH_INGEST_CONCURRENCY', 32);
const RUNS = envNumber('BENCH_INGEST_RUNS', 3);
const DUPLICATE_SHARE = 0.2;
const RESOURCES = envNumber('BENCH_INGEST_RESOURCES', 60_000);

async function seed(databaseUrl: string): Promise<void> {
  const client = new pg.Client(databaseUrl);
  await client.connect();
  await client.query(
    `insert into chats (team_id, channel_id, thread_ts, owner_user_id)
     select $1, 'CING' || g, '1700000000.' || lpad(g::text, 6, '0'), 'UOWNER' from generate_series(1, $2) g`,
    [TEAM, RESOURCES],
  );
  await client.query(
    `insert into resources (team_id, chat_id, kind, platform_id, status)
     select team_id, id, 'run', 'run_bench_' || channel_id, 'running' from chats where channel_id like 'CING%'`,
  );
  // The same runs, finished, in the sandbox platform the worker hosts: the turns the webhooks start
  // fetch them and run to the end, as real turns do.
  await client.query(
    `insert into sandbox.runs (id, benchmark_id, model_id, status, question_count, price, charged, score, category_scores, seed, flip_rate,
                               created_at, starts_at, finishes_at, duration_ms, started_at, finished_at)
     select 'run_bench_CING' || g, '104', (select id from sandbox.models order by id limit 1), 'completed', 100, 1, 1, 0.5, '[{"category": "general", "score": 0.5, "question_count": 100}]'::jsonb, g, 0.02,
            now(), now(), now(), 0, now(), now()
     from generate_series(1, $1) g`,
    [RESOURCES],
  );
  await client.end();
}

export async function main(): Promise<void> {
  console.log(`webhook-ingest: ${CONCURRENCY} keep-alive connections, ${SECONDS} s per run, ${RUNS} runs, ${DUPLICATE_SHARE * 100}% redeliveries; turns running in the worker role`);
  const postgres = await startPostgres();
  const fakes = await startRemoteFakes();
  console.log(`  the fakes of Slack and the model run ${fakes.where}`);
  const rates: number[] = [];
  let lostTotal = 0;
  let extraTotal = 0;
  try {
    for (let r = 0; r < RUNS; r += 1) {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-bench-ingest-'));
      const databaseUrl = await postgres.createDatabase('ingest');
      const secret = generateWebhookSecret();
      const env = botEnv({ slackApiUrl: fakes.slackApiUrl, anthropicUrl: fakes.anthropicUrl, databaseUrl, dataDir: dir }, { BENCHGEN_WEBHOOK_SECRET: secret });
      const bot = await spawnMain(env);
      await seed(databaseUrl);
      const agent = keepAliveAgent(CONCURRENCY);
      const url = `${bot.url}/webhooks/platform`;
      let next = 0;
      let sent = 0;
      let ok = 0;
      let failed = 0;
      const outcomes: Record<string, number> = {};
      const latencies: number[] = [];
      let unique = 0;
      const deliver = async (index: number) => {
        const id = `msg_bench_${index}`;
        const body = JSON.stringify({ type: 'run.completed', id, created_at: new Date().toISOString(), data: { id: `run_bench_CING${index + 1}` } });
        const res = await post(agent, url, body, { 'content-type': 'application/json', ...webhookHeaders(secret, id, new Date(), body) });
        sent += 1;
        latencies.push(res.ms);
        if (res.status === 200) {
          ok += 1;
          const outcome = (JSON.parse(res.body) as { outcome: string }).outcome;
          outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
        } else failed += 1;
      };
      // Diagnostic: BENCH_SAMPLE_WAITS=1 samples what Postgres backends wait on during the load.
      const waits = await sampleWaits(databaseUrl, 50);
      const deadline = performance.now() + SECONDS * 1000;
      const started = performance.now();
      let seq = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (performance.now() < deadline) {
            seq += 1;
            // Every fifth delivery redelivers an event already sent (same webhook id), as a retrying sender does.
            if (seq % Math.round(1 / DUPLICATE_SHARE) === 0 && next > 0) await deliver(Math.floor(Math.random() * next));
            else {
              if (next >= RESOURCES) throw new Error('raise BENCH_INGEST_RESOURCES');
              const index = next++;
              unique += 1;
              await deliver(index);
            }
          }
        }),
      );
      const elapsed = (performance.now() - started) / 1000;
      await waits.stop();
      agent.destroy();
      const client = new pg.Client(databaseUrl);
      await client.connect();
      const row = (
        await client.query<{ receipts: string; triggers: string; jobs: string; turns: string; distinct_turns: string }>(`
          select (select count(*) from webhook_receipts) as receipts,
                 (select count(*) from triggers where kind = 'platform_event') as triggers,
                 (select count(*) from turns) as turns,
                 (select count(distinct trigger_id) from turns) as distinct_turns,
                 (select count(*) from graphile_worker.jobs where task_identifier = 'run_turn') as jobs`)
      ).rows[0]!;
      await client.end();
      await bot.stop();
      // The bot's data and log folder: a bench keeps only the figures it printed.
      await rm(dir, { recursive: true, force: true });
      const rate = sent / elapsed;
      rates.push(rate);
      const lost = unique - Number(row.triggers);
      // Turns run while the load lasts, so a job is gone once its turn is done: no trigger may have two turns.
      const extra = Number(row.turns) - Number(row.distinct_turns) + Math.max(0, Number(row.jobs) - Number(row.triggers));
      lostTotal += Math.max(0, lost);
      extraTotal += Math.abs(extra) + Math.max(0, -lost);
      console.log(
        `  run ${r + 1}: ${sent} deliveries in ${fmt(elapsed)} s = ${fmt(rate, 0)}/s; latency p50 ${fmt(quantile(latencies, 0.5), 2)} p99 ${fmt(quantile(latencies, 0.99), 2)} ms; ` +
          `200 ${ok}, non-200 ${failed}; unique events ${unique}, outcomes ${JSON.stringify(outcomes)}; receipts ${row.receipts}, triggers ${row.triggers}, turns started ${row.turns}, jobs left ${row.jobs}`,
      );
    }
  } finally {
    await fakes.stop();
    await postgres.stop();
  }
  report('deliveries per second (median of runs)', `${fmt(median(rates), 0)}/s  [${rates.map((x) => fmt(x, 0)).join(', ')}] (target >= 1000/s: ${median(rates) >= 1000 ? 'met' : 'MISSED'})`);
  report('unique events without exactly one trigger, or turned twice', `${lostTotal + extraTotal} (target 0: ${lostTotal + extraTotal === 0 ? 'met' : 'MISSED'})`);
}

if (isMain(import.meta.url)) await main();
