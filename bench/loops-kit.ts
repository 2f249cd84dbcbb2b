// Runs N full loops (seed message -> verdict) against the bot in a child process, each in its own channel.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { appMention, type FakeMessage, type FakeSlack, startFakeSlack } from '../test/kit/fakes/slack/index.js';
import { startScriptedAnthropic, type ScriptedAnthropic } from '../test/kit/fakes/anthropic/index.js';
import type { Script } from '../test/kit/fakes/anthropic/index.js';
import { loopScript, SEED_MESSAGE } from '../test/kit/loop-script.js';
import { botEnv, type BotProcess, spawnBot, TEAM } from './bot.js';
import { channelFor, keepAliveAgent, post } from './load.js';
import { processCpuMs } from './cpu.js';
import { type BenchPostgres, startPostgres } from './postgres.js';
import { slackHeaders } from '../test/kit/signing.js';
import { sleep } from '../test/kit/wait.js';
import { fmt } from './stats.js';

export interface LoopsRun {
  postgres: BenchPostgres;
  databaseUrl: string;
  slack: FakeSlack;
  model: ScriptedAnthropic;
  bot: BotProcess;
  /** Thread ts per loop index. */
  threads: string[];
  /** The bot's log (JSON lines), until stop(). */
  logFile: string;
  /** Wall milliseconds from the first mention to the last verdict. */
  wallMs: number;
  /** Epoch milliseconds of the first mention. */
  startedAtEpochMs: number;
  /** Loops that reached the verdict. */
  finished: number;
  /** Peak RSS of the bot process, sampled until the end, in MB. */
  peakRssMb: number;
  /** The bot's `process.memoryUsage()` when its RSS was highest among the samples (MB). */
  memoryAtPeak: { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number } | undefined;
  /** Most loops started (mention acknowledged) and not yet at their verdict at one time. */
  peakInFlight: number;
  /** CPU milliseconds spent from the first mention to the last verdict, per process group. */
  cpuMs: { bot: number; postgres: number; bench: number };
  stop(): Promise<void>;
}

/**
 * The threads (`channel:thread ts`) holding a verdict, a message with a table block, in one pass over
 * the fake's messages; a message is looked into again only once it was updated. (Looking per thread
 * cost the bench process a pass over every message for each of 1,000 threads, four times a second:
 * CPU taken from the bot it measures.)
 */
function verdictWatcher(slack: FakeSlack): () => Set<string> {
  const seen = new WeakMap<FakeMessage, { updates: number; table: boolean }>();
  return () => {
    const threads = new Set<string>();
    for (const m of slack.messages()) {
      let known = seen.get(m);
      if (!known || known.updates !== m.updates) {
        known = { updates: m.updates, table: JSON.stringify(m.blocks ?? []).includes('"type":"table"') };
        seen.set(m, known);
      }
      if (known.table) threads.add(`${m.channel}:${m.threadTs ?? m.ts}`);
    }
    return threads;
  };
}

export async function runLoops(
  n: number,
  options: {
    env?: Record<string, string>;
    timeoutMs?: number;
    onProgress?: (done: number) => void;
    /** Spread the mentions evenly over this long (0: as fast as acknowledged). */
    rampMs?: number;
    /** The scripted model (default: loopScript()) and the message each loop starts with (default: the seed). */
    script?: Script;
    seedMessage?: string;
    /** Milliseconds between two looks for verdicts (default 250). */
    checkEveryMs?: number;
  } = {},
): Promise<LoopsRun> {
  const seed = options.seedMessage ?? SEED_MESSAGE;
  const postgres = await startPostgres();
  const slack = await startFakeSlack({ teamId: TEAM });
  // BENCH_MODEL_MS: every model answer takes this long, as a real model's would (0: instant).
  const modelMs = Number(process.env.BENCH_MODEL_MS ?? 0);
  const script = options.script ?? loopScript();
  const model = await startScriptedAnthropic(modelMs > 0 ? async (req, ctx) => ({ delayMs: modelMs, then: await script(req, ctx) }) : script);
  const databaseUrl = await postgres.createDatabase('loops');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-bench-loops-'));
  // Each loop costs about 12 credits on the sandbox: give the account, and the one person's and the
  // workspace's spending caps, enough for all of them.
  const credits = String(Math.max(1000, n * 50));
  const env = botEnv(
    { slackApiUrl: slack.apiUrl, anthropicUrl: model.baseURL, databaseUrl, dataDir: dir },
    { BENCH_STARTING_BALANCE: credits, SPEND_CAP_PERSON: credits, SPEND_CAP_WORKSPACE: credits, ...options.env },
  );
  // Diagnostics: BENCH_PROFILE_DIR writes CPU profiles of the bot; BENCH_BOT_NODE_ARGS adds Node or V8 flags to it.
  const nodeArgs = [
    ...(process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : []),
    ...(process.env.BENCH_BOT_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []),
  ];
  const logFile = path.join(dir, 'bot.log');
  const bot = await spawnBot(env, { nodeArgs, logFile });
  const agent = keepAliveAgent(64);
  const threads: string[] = [];
  const cpuAt = async () => ({ bot: await processCpuMs(bot.pid), postgres: await postgres.cpuMs(), bench: process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000 });
  const cpuBefore = await cpuAt();
  const started = performance.now();
  const startedAtEpochMs = Date.now();
  // Mentions go out at most 64 at a time, as fast as the bot acknowledges them, or spread over rampMs.
  let next = 0;
  const startedAt: number[] = [];
  const finishedAt: number[] = [];
  await Promise.all(
    Array.from({ length: Math.min(64, n) }, async () => {
      while (next < n) {
        const i = next++;
        const due = started + ((options.rampMs ?? 0) * i) / n;
        if (due > performance.now()) await sleep(due - performance.now());
        const channel = channelFor(i);
        const event = appMention({ user: 'UOWNER', text: seed, channel, team: TEAM });
        slack.seedMessage({ channel, user: 'UOWNER', text: seed, ts: event.ts as string });
        threads[i] = event.ts as string;
        const body = JSON.stringify({ token: 't', team_id: TEAM, api_app_id: 'A0FAKEAPP', event, type: 'event_callback', event_id: `EvL${i}`, event_time: Math.floor(Date.now() / 1000), authorizations: [{ team_id: TEAM, user_id: 'UBOT', is_bot: true }] });
        const res = await post(agent, `${bot.url}/slack/events`, body, slackHeaders(env.SLACK_SIGNING_SECRET!, body));
        if (res.status !== 200) throw new Error(`mention ${i} answered ${res.status}`);
        startedAt[i] = performance.now();
      }
    }),
  );
  agent.destroy();
  const open = new Set(threads.map((_, i) => i));
  let peakRssMb = 0;
  let memoryAtPeak: LoopsRun['memoryAtPeak'];
  let snapshotTaken = false;
  const deadline = Date.now() + (options.timeoutMs ?? 600_000);
  const verdicts = verdictWatcher(slack);
  while (open.size > 0 && Date.now() < deadline) {
    const withVerdict = verdicts();
    for (const i of open) {
      if (withVerdict.has(`${channelFor(i)}:${threads[i]!}`)) {
        open.delete(i);
        finishedAt[i] = performance.now();
      }
    }
    peakRssMb = Math.max(peakRssMb, await bot.peakRssMb());
    const usage = await bot.request<NodeJS.MemoryUsage>('memory');
    if (usage && usage.rss / 1048576 > (memoryAtPeak?.rss ?? 0)) {
      const mb = (x: number) => x / 1048576;
      memoryAtPeak = { rss: mb(usage.rss), heapTotal: mb(usage.heapTotal), heapUsed: mb(usage.heapUsed), external: mb(usage.external), arrayBuffers: mb(usage.arrayBuffers) };
    }
    // Diagnostic: BENCH_HEAP_SNAPSHOT_AT=<verdicts> writes a heap snapshot of the bot once that many
    // loops are done; BENCH_HEAP_SNAPSHOT_RSS_MB=<MB> once its RSS first passes that (near its peak).
    // A snapshot collects garbage first: the heap used right after it is what was live.
    const snapshotAtRss = Number(process.env.BENCH_HEAP_SNAPSHOT_RSS_MB ?? 0);
    if (
      !snapshotTaken &&
      ((process.env.BENCH_HEAP_SNAPSHOT_AT && n - open.size >= Number(process.env.BENCH_HEAP_SNAPSHOT_AT)) ||
        (snapshotAtRss > 0 && usage && usage.rss / 1048576 >= snapshotAtRss))
    ) {
      snapshotTaken = true;
      const file = await bot.request<string>('heap-snapshot');
      const after = await bot.request<NodeJS.MemoryUsage>('memory');
      const mb = (x: number | undefined) => fmt((x ?? 0) / 1048576, 0);
      console.log(
        `  heap snapshot of the bot at ${n - open.size} verdicts, ${fmt((performance.now() - started) / 1000, 0)} s: ${file}; ` +
          `before it rss ${mb(usage?.rss)} MB, heap used ${mb(usage?.heapUsed)} MB; after it (live) heap used ${mb(after?.heapUsed)} MB, rss ${mb(after?.rss)} MB`,
      );
    }
    options.onProgress?.(n - open.size);
    if (open.size > 0) await sleep(options.checkEveryMs ?? 250);
  }
  const wallMs = performance.now() - started;
  const changes = [...startedAt.map((t) => [t, 1] as const), ...finishedAt.filter((t) => t !== undefined).map((t) => [t, -1] as const)].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let inFlight = 0;
  let peakInFlight = 0;
  for (const [, delta] of changes) peakInFlight = Math.max(peakInFlight, (inFlight += delta));
  const cpuAfter = await cpuAt();
  const cpuMs = { bot: cpuAfter.bot - cpuBefore.bot, postgres: cpuAfter.postgres - cpuBefore.postgres, bench: cpuAfter.bench - cpuBefore.bench };
  peakRssMb = Math.max(peakRssMb, await bot.peakRssMb());
  return {
    postgres,
    databaseUrl,
    slack,
    model,
    bot,
    threads,
    logFile,
    wallMs,
    startedAtEpochMs,
    finished: n - open.size,
    peakRssMb,
    memoryAtPeak,
    cpuMs,
    peakInFlight,
    stop: async () => {
      await bot.stop();
      await slack.stop();
      await model.stop();
      await postgres.stop();
      if (process.env.BENCH_KEEP_TMP) console.log(`kept ${dir}`); else await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Runs a query on the loops' database. */
export async function query<T extends pg.QueryResultRow>(databaseUrl: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client(databaseUrl);
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}
