// Overhead per step: platform webhook received -> first Slack API call of the turn it wakes (model instant).
import { envNumber, fmt, isMain, median, quantile, report } from './stats.js';
import { query, runLoops } from './loops-kit.js';

const LOOPS = envNumber('BENCH_STEP_LOOPS', 5);
const RUNS = envNumber('BENCH_STEP_RUNS', 3);
// 0.02: a run takes >= 1.2 s, so the poster's 1 post/s/channel pacing never delays a step's post.
const TIME_SCALE = process.env.BENCH_STEP_TIME_SCALE ?? '0.02';
// The loops' mentions are spread over this many seconds, so that (a loop lasting about 10 s) each
// step is measured on an otherwise idle bot: the overhead itself. 0 starts them all at once, so
// their steps coincide: the overhead under contention (see also bench/scale.ts).
const RAMP_S = envNumber('BENCH_STEP_RAMP_S', 60);

export async function main(): Promise<void> {
  console.log(`step-overhead: ${LOOPS} loops ${RAMP_S > 0 ? `started ${fmt(RAMP_S / LOOPS, 0)} s apart` : 'started at once'} x ${RUNS} runs, SANDBOX_TIME_SCALE=${TIME_SCALE}, worker poll 500 ms (LISTEN/NOTIFY wakes it)`);
  const p50s: number[] = [];
  const all: number[] = [];
  const parts = { queue: [] as number[], pickup: [] as number[], turn: [] as number[] };
  for (let r = 0; r < RUNS; r += 1) {
    const run = await runLoops(LOOPS, { env: { SANDBOX_TIME_SCALE: TIME_SCALE }, rampMs: RAMP_S * 1000 });
    try {
      const rows = await query<{ channel_id: string; received: Date; created: Date; started: Date }>(
        run.databaseUrl,
        `select c.channel_id, w.received_at as received, t.created_at as created, tu.started_at as started
           from webhook_receipts w
           join resources r on r.platform_id = w.resource_id
           join chats c on c.id = r.chat_id
           join triggers t on t.team_id = r.team_id and t.dedupe_key = 'event:' || r.kind || ':' || r.platform_id || ':' || split_part(w.type, '.', 2)
           join turns tu on tu.trigger_id = t.id
          where t.payload->>'webhookId' = w.webhook_id`,
      );
      const samples: number[] = [];
      for (const row of rows) {
        const received = row.received.getTime();
        const first = run.slack.calls.find((c) => c.args.channel === row.channel_id && c.at >= received);
        if (!first) continue;
        samples.push(first.at - received);
        parts.queue.push(row.created.getTime() - received);
        parts.pickup.push(row.started.getTime() - row.created.getTime());
        parts.turn.push(first.at - row.started.getTime());
      }
      all.push(...samples);
      p50s.push(median(samples));
      console.log(`  run ${r + 1}: ${run.finished}/${LOOPS} loops finished, ${samples.length} webhook-woken steps: p50 ${fmt(median(samples), 0)} ms, max ${fmt(Math.max(...samples), 0)} ms`);
    } finally {
      await run.stop();
    }
  }
  report('webhook -> first Slack call, p50 (median of runs)', `${fmt(median(p50s), 0)} ms [${p50s.map((x) => fmt(x, 0)).join(', ')}] (target < 150 ms: ${median(p50s) < 150 ? 'met' : 'MISSED'})`);
  report('  all steps p90 / max', `${fmt(quantile(all, 0.9), 0)} / ${fmt(Math.max(...all), 0)} ms over ${all.length} steps`);
  report('  p50 ingest (receipt -> trigger row)', `${fmt(median(parts.queue), 0)} ms`);
  report('  p50 queue (trigger -> turn started)', `${fmt(median(parts.pickup), 0)} ms`);
  report('  p50 turn (turn started -> first Slack call)', `${fmt(median(parts.turn), 0)} ms`);
}

if (isMain(import.meta.url)) await main();
