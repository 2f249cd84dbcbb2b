// Bolt wiring: Socket Mode when an app-level token is set, HTTP mode (/slack/events) otherwise.
import { App, HTTPReceiver, LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { RequestListener } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { registerListeners, type ListenerDeps } from './listeners/index.js';

export interface SlackApp {
  app: App;
  /** In HTTP mode, the handler for Slack's requests, mounted on the bot's HTTP server. */
  requestListener: RequestListener | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

function boltLogger(logger: Logger): BoltLogger {
  const child = logger.child({ component: 'bolt' });
  let level = LogLevel.INFO;
  return {
    debug: (...msg) => child.debug(msg.map(String).join(' ')),
    info: (...msg) => child.info(msg.map(String).join(' ')),
    warn: (...msg) => child.warn(msg.map(String).join(' ')),
    error: (...msg) => child.error(msg.map(String).join(' ')),
    setLevel: (l) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}

export async function createSlackApp(config: Config, deps: ListenerDeps): Promise<SlackApp> {
  const logger = boltLogger(deps.logger);
  const clientOptions = config.slack.apiUrl ? { slackApiUrl: config.slack.apiUrl } : {};
  let app: App;
  let receiver: HTTPReceiver | undefined;
  if (config.slack.socketMode) {
    app = new App({
      token: config.slack.botToken,
      appToken: config.slack.appToken,
      socketMode: true,
      clientOptions,
      logger,
      deferInitialization: true,
    });
  } else {
    receiver = new HTTPReceiver({
      signingSecret: config.slack.signingSecret!,
      endpoints: '/slack/events',
      // Answer Slack only after the trigger is stored: a failed store gets a 500 and Slack redelivers.
      processBeforeResponse: true,
      logger,
    });
    app = new App({ token: config.slack.botToken, receiver, clientOptions, logger, deferInitialization: true });
  }
  app.error(async (error) => {
    deps.logger.error({ err: error }, 'slack listener failed');
    throw error;
  });
  registerListeners(app, deps);
  await app.init();
  return {
    app,
    requestListener: receiver?.requestListener,
    start: async () => {
      if (config.slack.socketMode) await app.start();
    },
    stop: async () => {
      if (config.slack.socketMode) await app.stop();
    },
  };
}
