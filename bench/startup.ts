// Start-up: time to ready with an existing (migrated) database, and first start with a fresh embedded one.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startFakeSlack } from '../test/kit/fakes/slack/index.js';
import { startScriptedAnthropic, text } from '../test/kit/fakes/anthropic/index.js';
import { botEnv, spawnBot, TEAM } from './bot.js';
import { envNumber, fmt, isMain, median, report } from './stats.js';
import { startPostgres } from './postgres.js';

const RUNS = envNumber('BENCH_STARTUP_RUNS', 5);

export async function main(): Promise<void> {
  console.log(`startup: ${RUNS} starts each; "spawn" = new node process (tsx) to ready, "startBot" = startBot() alone`);
  const slack = await startFakeSlack({ teamId: TEAM });
  const model = await startScriptedAnthropic(() => ({ content: [text('ok')] }));
  const postgres = await startPostgres();
  const results: Record<string, { spawn: number[]; startBot: number[] }> = {};
  const record = (label: string, spawnMs: number, startBotMs: number) => {
    results[label] ??= { spawn: [], startBot: [] };
    results[label].spawn.push(spawnMs);
    results[label].startBot.push(startBotMs);
  };
  try {
    const databaseUrl = await postgres.createDatabase('startup');
    const embeddedDir = await mkdtemp(path.join(os.tmpdir(), 'verdict-bench-start-'));
    await chmod(embeddedDir, 0o755); // Postgres runs as its own user under root.
    for (let r = 0; r < RUNS + 1; r += 1) {
      // DATABASE_URL set, schema already migrated after the first start (which is not counted).
      const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-bench-start-'));
      const existing = await spawnBot(botEnv({ slackApiUrl: slack.apiUrl, anthropicUrl: model.baseURL, databaseUrl, dataDir: dir }), { logFile: path.join(dir, 'bot.log') });
      await existing.stop();
      if (r > 0) record('existing database (DATABASE_URL)', existing.readyMs, existing.startBotMs);
      // Embedded: a fresh data dir (initdb + start). A restart on that dir is not timed: stopping the
      // embedded server from the child can outlive the 20 s kill timeout (see docs/performance.md).
      const fresh = path.join(embeddedDir, `fresh-${r}`);
      const logFile = path.join(embeddedDir, `bot-${r}.log`);
      const first = await spawnBot(botEnv({ slackApiUrl: slack.apiUrl, anthropicUrl: model.baseURL, dataDir: fresh }), { logFile });
      await first.stop();
      await rm(fresh, { recursive: true, force: true });
      if (r > 0) {
        record('embedded, fresh data dir (first start)', first.readyMs, first.startBotMs);
      }
    }
  } finally {
    await postgres.stop();
    await slack.stop();
    await model.stop();
  }
  for (const [label, v] of Object.entries(results)) {
    report(label, `startBot median ${fmt(median(v.startBot), 0)} ms, spawn-to-ready median ${fmt(median(v.spawn), 0)} ms [${v.startBot.map((x) => fmt(x, 0)).join(', ')}]`);
  }
}

if (isMain(import.meta.url)) await main();
