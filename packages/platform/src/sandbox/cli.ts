// `npm run sandbox`: runs the sandbox platform standalone, on DATABASE_URL or an embedded Postgres in .data/sandbox-pg.
import { ConfigError } from '@verdict/contract/env';
import { loadEngineConfig } from '../config.js';
import { inferenceFromConfig } from '../engines/engine-setup.js';
import { embeddedDataDir, embeddedPlaceLine, startEmbeddedPostgres, type EmbeddedDatabase } from '@verdict/runtime/embedded-postgres';
import { logJson } from './log-json.js';
import { startSandbox, type SandboxLogger } from './sandbox.js';

function numberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) {
    console.error(`${name} must be a number, got "${raw}"`);
    process.exit(1);
  }
  return value;
}

const consoleLogger: SandboxLogger = {
  debug: () => undefined,
  info: (obj, msg) => console.log(`[sandbox] ${msg ?? ''} ${logJson(obj)}`),
  warn: (obj, msg) => console.warn(`[sandbox] ${msg ?? ''} ${logJson(obj)}`),
  error: (obj, msg) => console.error(`[sandbox] ${msg ?? ''} ${logJson(obj)}`),
};

async function main(): Promise<void> {
  let inference;
  let benchmarksDir: string | undefined;
  try {
    const engines = loadEngineConfig();
    inference = inferenceFromConfig(engines);
    benchmarksDir = engines.benchmarksDir;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    const place = await embeddedDataDir({ dataRoot: '.data', name: 'sandbox-pg', explicit: false });
    if (place.movedFrom) console.log(embeddedPlaceLine(place));
    embedded = await startEmbeddedPostgres({ dataDir: place.dataDir });
    databaseUrl = embedded.url;
  }
  const sandbox = await startSandbox({
    databaseUrl,
    port: numberFromEnv('SANDBOX_PORT', 4010),
    host: process.env.SANDBOX_HOST || undefined,
    timeScale: numberFromEnv('SANDBOX_TIME_SCALE', 1),
    webhookUrl: process.env.SANDBOX_WEBHOOK_URL || undefined,
    publicUrl: process.env.SANDBOX_PUBLIC_URL || undefined,
    logger: consoleLogger,
    ...(inference ? { inference } : {}),
    ...(benchmarksDir ? { benchmarksDir } : {}),
  });
  console.log(
    [
      'BenchGen sandbox platform is running',
      `  url:            ${sandbox.url}   (API under /api/v1)`,
      `  token:          ${sandbox.token}`,
      `  webhook secret: ${sandbox.webhookSecret}`,
      `  database:       ${embedded ? 'embedded Postgres in .data/sandbox-pg' : 'DATABASE_URL'}`,
      'Point the bot at it with BENCHGEN_API_URL, BENCHGEN_API_TOKEN and BENCHGEN_WEBHOOK_SECRET.',
    ].join('\n'),
  );

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    console.log(`[sandbox] ${signal}: stopping`);
    await sandbox.stop();
    await embedded?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error('sandbox failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
