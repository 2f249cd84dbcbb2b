// Entry point: load .env and the configuration, start the bot, stop cleanly on SIGINT/SIGTERM.
import { existsSync } from 'node:fs';
import { startBot, type Bot } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { describeError } from './startup-error.js';

async function main(): Promise<void> {
  // Variables already set in the environment win over the file, as with Node's --env-file.
  const envFile = existsSync('.env') ? '.env' : undefined;
  if (envFile) process.loadEnvFile(envFile);
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
  // The bot stops in order (worker, HTTP, pool, then the embedded Postgres, which runs in its own
  // session so the terminal's Ctrl-C does not reach it); a signal during start-up waits for the
  // start to finish or fail, then stops.
  let bot: Bot | undefined;
  let requested: string | undefined;
  let stopping = false;
  const shutdown = (running: Bot, signal: string) => {
    if (stopping) return;
    stopping = true;
    running.logger.info({ signal }, 'shutting down');
    running
      .stop()
      .then(() => {
        running.logger.info('stopped');
        process.exit(0);
      })
      .catch((error: unknown) => {
        console.error(`Shutdown failed: ${describeError(error)}`);
        process.exit(1);
      });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (bot) return shutdown(bot, signal);
    if (!requested) console.error(`${signal} received during start-up: stopping as soon as the start finishes`);
    requested = signal;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  bot = await startBot(config);
  const running = bot;
  // A request or job whose error escaped every handler (a library's fire-and-forget promise) is
  // logged; the process keeps serving everything else.
  process.on('unhandledRejection', (reason) => running.logger.error({ err: reason }, 'unhandled rejection; the process stays up'));
  if (envFile) bot.logger.info({ file: envFile }, 'loaded settings from .env');
  if (requested) shutdown(bot, requested);
}

main().catch((error: unknown) => {
  console.error(`Start-up failed: ${describeError(error)}`);
  process.exit(1);
});
