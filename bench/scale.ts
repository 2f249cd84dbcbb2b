// Scale: 1,000 concurrent loops in one bot process on the sandbox: peak RSS, turns/s, worst queue wait.
import { envNumber, fmt, isMain, quantile, report } from './stats.js';
import { query, runLoops } from './loops-kit.js';
import { printStatements } from './postgres.js';

const LOOPS = envNumber('BENCH_SCALE_LOOPS', 1000);
// Turns here are I/O-bound (model, platform, Slack, Postgres round trips); 32 keeps Postgres (pool = 42) busy without thrashing 2 cores.
const CONCURRENCY = process.env.BENCH_SCALE_CONCURRENCY ?? '32';
const TIME_SCALE = process.env.BENCH_SCALE_TIME_SCALE ?? '0.05';
// 0: every mention at once (a thundering herd). A ramp spreads them, as people's messages are.
const RAMP_S = envNumber('BENCH_SCALE_RAMP_S', 0);

/**
 * BENCH_SCALE_VARIANTS: runs, one after the other, with the thread surfaces named left off, e.g.
 * `all,plan-poll,plan,session,chart` (`all`: everything on; a name: that surface off, as
 * BENCH_OFF in bench/bot-process.ts; `a+b`: both off). Default: `all` alone.
 */
const VARIANTS = (process.env.BENCH_SCALE_VARIANTS ?? 'all').split(',').map((v) => v.trim()).filter(Boolean);

interface ScaleFigures {
  variant: string;
  finished: number;
  wallS: number;
  turns: number;
  turnsPerS: number;
  transactionsPerTurn: number;
  queueP99Ms: number;
  peakRssMb: number;
  cpuPerTurnMs: { bot: number; postgres: number; bench: number };
}

export async function main(): Promise<void> {
  const figures: ScaleFigures[] = [];
  for (const variant of VARIANTS) {
    const off = variant === 'all' ? '' : variant.replaceAll('+', ',');
    console.log(`\n--- ${variant === 'all' ? 'everything on' : `off: ${off}`}`);
    figures.push(await measure(variant, off));
  }
  if (figures.length < 2) return;
  const base = figures[0]!;
  console.log(`\nside by side (${LOOPS} loops each, in this order; ratios to ${base.variant}):`);
  console.log(`  ${'variant'.padEnd(22)} ${'verdicts'.padStart(9)} ${'wall s'.padStart(8)} ${'turns/s'.padStart(8)} ${'txn/turn'.padStart(9)} ${'CPU ms/turn bot/pg/fakes'.padStart(26)} ${'queue p99 s'.padStart(12)} ${'RSS MB'.padStart(7)} ${'wall x'.padStart(7)} ${'CPU x'.padStart(6)}`);
  const cpu = (f: ScaleFigures) => f.cpuPerTurnMs.bot + f.cpuPerTurnMs.postgres + f.cpuPerTurnMs.bench;
  for (const f of figures) {
    const c = f.cpuPerTurnMs;
    console.log(
      `  ${(f.variant === 'all' ? 'all on' : `${f.variant} off`).padEnd(22)} ${`${f.finished}/${LOOPS}`.padStart(9)} ${fmt(f.wallS, 1).padStart(8)} ${fmt(f.turnsPerS, 1).padStart(8)} ${fmt(f.transactionsPerTurn, 1).padStart(9)} ` +
        `${`${fmt(c.bot, 1)} / ${fmt(c.postgres, 1)} / ${fmt(c.bench, 1)}`.padStart(26)} ${fmt(f.queueP99Ms / 1000, 1).padStart(12)} ${fmt(f.peakRssMb, 0).padStart(7)} ` +
        `${fmt(f.wallS / base.wallS, 2).padStart(7)} ${fmt((cpu(f) * f.turns) / (cpu(base) * base.turns), 2).padStart(6)}`,
    );
  }
}

async function measure(variant: string, off: string): Promise<ScaleFigures> {
  console.log(`scale: ${LOOPS} loops, mentions ${RAMP_S > 0 ? `spread over ${RAMP_S} s` : 'all at once'}, WORKER_CONCURRENCY=${CONCURRENCY}, SANDBOX_TIME_SCALE=${TIME_SCALE}, model answers ${Number(process.env.BENCH_MODEL_MS ?? 0) > 0 ? `after ${process.env.BENCH_MODEL_MS} ms` : 'instantly'}`);
  let lastPrint = 0;
  const run = await runLoops(LOOPS, {
    env: { WORKER_CONCURRENCY: CONCURRENCY, SANDBOX_TIME_SCALE: TIME_SCALE, LOG_LEVEL: 'warn', BENCH_OFF: off },
    timeoutMs: envNumber('BENCH_SCALE_TIMEOUT_S', 1200) * 1000,
    rampMs: RAMP_S * 1000,
    onProgress: (done) => {
      if (Date.now() - lastPrint > 15_000) {
        lastPrint = Date.now();
        console.log(`  ... ${done}/${LOOPS} verdicts`);
      }
    },
  });
  try {
    const waits = await query<{ kind: string; wait_ms: number; turn_ms: number }>(
      run.databaseUrl,
      `select t.kind, extract(epoch from (tu.started_at - t.created_at)) * 1000 as wait_ms,
              extract(epoch from (tu.finished_at - tu.started_at)) * 1000 as turn_ms
         from triggers t join turns tu on tu.trigger_id = t.id`,
    );
    const span = await query<{ turns: string; seconds: number }>(
      run.databaseUrl,
      `select count(*)::text as turns, extract(epoch from (max(finished_at) - min(started_at))) as seconds from turns where status = 'completed'`,
    );
    const w = waits.map((x) => Number(x.wait_ms));
    const turns = Number(span[0]!.turns);
    const seconds = Number(span[0]!.seconds);
    const over = w.filter((x) => x > 1000).length;
    // Targets are for 1,000 loops mentioned at once on a quiet 2-core machine (docs/performance.md).
    report('loops finished', `${run.finished}/${LOOPS} in ${fmt(run.wallMs / 1000)} s (target for 1,000: all, <= 180 s)`);
    report('loops in flight at once (peak)', `${run.peakInFlight}`);
    const turnMs = waits.map((x) => Number(x.turn_ms)).filter((x) => Number.isFinite(x));
    report('turn duration p50 / p99', `${fmt(quantile(turnMs, 0.5), 0)} / ${fmt(quantile(turnMs, 0.99), 0)} ms`);
    report('peak RSS of the bot process (VmHWM)', `${fmt(run.peakRssMb, 0)} MB (target < 450 MB: ${run.peakRssMb < 450 ? 'met' : 'MISSED'})`);
    const m = run.memoryAtPeak;
    if (m) report('memory at the highest sampled RSS', `rss ${fmt(m.rss, 0)} MB: V8 heap ${fmt(m.heapUsed, 0)} used of ${fmt(m.heapTotal, 0)} MB, external ${fmt(m.external, 0)} MB (array buffers ${fmt(m.arrayBuffers, 0)} MB), the rest native`);
    report('turns completed / per second', `${turns} / ${fmt(turns / seconds, 1)} per s (first start to last finish)`);
    report('queue wait trigger -> turn start: p50 / p99 / max', `${fmt(quantile(w, 0.5), 0)} / ${fmt(quantile(w, 0.99), 0)} / ${fmt(Math.max(...w), 0)} ms; ${over} of ${w.length} over 1 s; p99 target <= 45 s: ${quantile(w, 0.99) <= 45_000 ? 'met' : 'MISSED'}`);
    const [stats] = await query<{ commits: string }>(run.databaseUrl, `select xact_commit + xact_rollback as commits from pg_stat_database where datname = current_database()`);
    const cpu = run.cpuMs;
    const perTurn = (ms: number) => fmt(ms / Math.max(1, turns), 1);
    report(
      'CPU per turn: bot (+ in-process sandbox) / Postgres / fakes and load',
      `${perTurn(cpu.bot)} / ${perTurn(cpu.postgres)} / ${perTurn(cpu.bench)} ms; ${fmt((cpu.bot + cpu.postgres + cpu.bench) / run.wallMs, 2)} cores busy on average`,
    );
    const transactions = Number(stats!.commits) / Math.max(1, turns);
    report('Postgres transactions per turn (all of the run, sandbox included)', `${fmt(transactions, 0)} (target <= 40: ${transactions <= 40 ? 'met' : 'MISSED'})`);
    report('Slack limit violations (fake Slack)', `${run.slack.violations.length}`);
    const kinds = new Map<string, number>();
    for (const v of run.slack.violations) kinds.set(v.replace(/\d+/g, 'N'), (kinds.get(v.replace(/\d+/g, 'N')) ?? 0) + 1);
    for (const [kind, count] of kinds) console.log(`    ${count} x ${kind}`);
    await printStatements(run.postgres.server.url, run.databaseUrl, turns);
    return {
      variant,
      finished: run.finished,
      wallS: run.wallMs / 1000,
      turns,
      turnsPerS: turns / seconds,
      transactionsPerTurn: transactions,
      queueP99Ms: quantile(w, 0.99),
      peakRssMb: run.peakRssMb,
      cpuPerTurnMs: { bot: cpu.bot / Math.max(1, turns), postgres: cpu.postgres / Math.max(1, turns), bench: cpu.bench / Math.max(1, turns) },
    };
  } finally {
    await run.stop();
  }
}

if (isMain(import.meta.url)) await main();
