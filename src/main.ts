// Entry point: load .env and the configuration, then run ROLE: `all` (default, `npm start`) is the
// parent of a web and a worker process; `web` or `worker` runs that role alone, or as the parent's child.
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { createRootLogger, startRole } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { PARENT_PID_ENV, startSupervisor, type RoleMessage } from './roles/supervisor.js';
import { describeError } from '@verdict/runtime/startup-error';

interface Running {
  logger: Logger;
  stop(): Promise<void>;
}

/** A role process started by the parent of `npm start`: it has an IPC channel to the parent that named itself. */
const supervised = process.send !== undefined && process.env[PARENT_PID_ENV] === String(process.ppid);

function tellParent(message: RoleMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

async function run(config: Config): Promise<Running> {
  if (config.role === 'all') {
    const logger = createRootLogger(config);
    const supervisor = await startSupervisor(config, { entry: process.argv[1]!, env: process.env, logger });
    return { logger, stop: supervisor.stop };
  }
  const role = await startRole(config, config.role, { supervised });
  role.logger.info({ url: role.url, platform: role.platform }, `${config.role} role ready`);
  if (supervised) await tellParent({ type: 'ready', ...(role.url ? { url: role.url, mode: config.slack.socketMode ? 'socket' : 'http' } : {}), ...(role.platform ? { platform: role.platform } : {}) });
  return role;
}

async function main(): Promise<void> {
  if (supervised) {
    // The parent stops this role (SIGTERM) in its order; if the parent itself is gone (killed), so is this role.
    process.on('disconnect', () => process.exit(1));
  }
  // Variables already set in the environment win over the file, as with Node's --env-file.
  const envFile = existsSync('.env') ? '.env' : undefined;
  if (envFile) process.loadEnvFile(envFile);
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      if (supervised) await tellParent({ type: 'failed', message: error.message, exitCode: 78 });
      else console.error(error.message);
      process.exit(78);
    }
    throw error;
  }
  // The bot stops in order (the parent: web role, worker role, then the embedded Postgres, which runs
  // in its own session so the terminal's Ctrl-C does not reach it); a signal during start-up waits
  // for the start to finish or fail, then stops. A role under the parent stops quietly: the parent
  // says what happens.
  let running: Running | undefined;
  let requested: string | undefined;
  let stopping = false;
  const shutdown = (current: Running, signal: string) => {
    if (stopping) return;
    stopping = true;
    if (!supervised) current.logger.info({ signal }, 'shutting down');
    current
      .stop()
      .then(() => {
        if (!supervised) current.logger.info('stopped');
        process.exit(0);
      })
      .catch((error: unknown) => {
        console.error(`Shutdown failed: ${describeError(error)}`);
        process.exit(1);
      });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (running) return shutdown(running, signal);
    // The parent stops a role that is still starting only when it gives up or stops everything: nothing to finish.
    if (supervised) process.exit(0);
    if (!requested && !supervised) console.error(`${signal} received during start-up: stopping as soon as the start finishes`);
    requested = signal;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    running = await run(config);
  } catch (error) {
    if (!supervised) throw error;
    await tellParent({ type: 'failed', message: describeError(error), exitCode: 1 });
    process.exit(1);
  }
  const current = running;
  // A request or job whose error escaped every handler (a library's fire-and-forget promise) is
  // logged; the process keeps serving everything else.
  process.on('unhandledRejection', (reason) => current.logger.error({ err: reason }, 'unhandled rejection; the process stays up'));
  if (envFile && !supervised) current.logger.info({ file: envFile }, 'loaded settings from .env');
  if (requested) shutdown(current, requested);
}

main().catch((error: unknown) => {
  console.error(`Start-up failed: ${describeError(error)}`);
  process.exit(1);
});
