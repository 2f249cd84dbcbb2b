// Agent cost of one full loop (seed message -> verdict): billed tokens, request bytes, USD, caching savings.
import { pricesFor } from '../src/agent/pricing.js';
import { fetchOutcomes } from '../src/agent/tools/benchmark-analyze.js';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { startSandbox } from '@verdict/platform/sandbox/sandbox';
import { envNumber, fmt, isMain, median, report } from './stats.js';
import { query, runLoops } from './loops-kit.js';

const RUNS = envNumber('BENCH_COST_RUNS', 3);
const MODEL = 'claude-sonnet-4-5';

interface Usage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

export async function main(): Promise<void> {
  const prices = pricesFor(MODEL)!;
  console.log(`loop-cost: ${RUNS} single loops, model ${MODEL} at $${prices.input}/$${prices.cacheWrite}/$${prices.cacheRead}/$${prices.output} per MTok (input/cache write/cache read/output)`);
  const equivalents: number[] = [];
  let last: Record<string, number> = {};
  for (let r = 0; r < RUNS; r += 1) {
    const run = await runLoops(1);
    try {
      const answered = run.model.requests.filter((q) => q.status === 200 && q.path === '/v1/messages');
      const sum = { uncached: 0, write: 0, read: 0, output: 0, bytes: 0, maxBytes: 0 };
      for (const q of answered) {
        const u = (q.response as { usage: Usage }).usage;
        sum.uncached += u.input_tokens;
        sum.write += u.cache_creation_input_tokens;
        sum.read += u.cache_read_input_tokens;
        sum.output += u.output_tokens;
        sum.bytes += q.bytes;
        sum.maxBytes = Math.max(sum.maxBytes, q.bytes);
      }
      const equiv = sum.uncached + 1.25 * sum.write + 0.1 * sum.read;
      const allInput = sum.uncached + sum.write + sum.read;
      const usd = (sum.uncached * prices.input + sum.write * prices.cacheWrite + sum.read * prices.cacheRead + sum.output * prices.output) / 1e6;
      const usdNoCache = (allInput * prices.input + sum.output * prices.output) / 1e6;
      // What the bot itself recorded for the loop's turns (src/agent/pricing.ts costUsd).
      const stored = await query<{ cost: string; turns: string }>(run.databaseUrl, `select sum(cost_usd)::text as cost, count(*)::text as turns from turns`);
      // Non-compact estimate: the full per-question results of both runs, as a tool result would dump them.
      let dumpTokens = NaN;
      const runs = await query<{ platform_id: string }>(run.databaseUrl, `select platform_id from resources where kind = 'run' order by id`);
      {
        // A second sandbox on the same database reuses the stored API token; nothing is due any more.
        const sandbox = await startSandbox({ databaseUrl: run.databaseUrl, tickIntervalMs: 3_600_000 });
        try {
          const platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token });
          const dumps = await Promise.all(runs.map((x) => fetchOutcomes(platform, x.platform_id)));
          dumpTokens = Math.ceil(JSON.stringify(dumps).length / 4);
        } finally {
          await sandbox.stop();
        }
      }
      equivalents.push(equiv);
      last = { requests: answered.length, ...sum, equiv, allInput, usd, usdNoCache, storedUsd: Number(stored[0]?.cost ?? NaN), turns: Number(stored[0]?.turns ?? NaN), dumpTokens, finished: run.finished };
      console.log(`  run ${r + 1}: ${JSON.stringify(last)}`);
    } finally {
      await run.stop();
    }
  }
  const l = last;
  report('model requests / turns per loop', `${l.requests} / ${l.turns}`);
  report('input tokens: uncached / cache write / cache read', `${l.uncached} / ${l.write} / ${l.read}`);
  report('output tokens', `${l.output}`);
  report('request bytes: total / largest', `${l.bytes} / ${l.maxBytes}`);
  report('input-token equivalents (median of runs)', `${fmt(median(equivalents), 0)} (target < 30000: ${median(equivalents) < 30000 ? 'met' : 'MISSED'})`);
  report('USD per loop (bench / as stored by the bot)', `$${fmt(l.usd!, 4)} / $${fmt(l.storedUsd!, 4)}`);
  report('same requests without caching', `${l.allInput} input tokens, $${fmt(l.usdNoCache!, 4)} (caching saves ${fmt(100 * (1 - l.usd! / l.usdNoCache!), 0)}% of USD, ${fmt(100 * (1 - l.equiv! / l.allInput!), 0)}% of input equivalents)`);
  report('per-question results dump of the two runs', `${l.dumpTokens} tokens (>= ${fmt(1.25 * l.dumpTokens!, 0)} equivalents added if sent once; +${fmt(0.1 * l.dumpTokens!, 0)} per later request)`);
}

if (isMain(import.meta.url)) await main();
