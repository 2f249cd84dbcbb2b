// Bolt wiring: Socket Mode when an app-level token is set, HTTP mode (/slack/events) otherwise.
import { App, HTTPReceiver, LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
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

/**
 * Why a Slack request body is not one Bolt can take, or undefined when it is. Bolt's HTTP receiver
 * reads `body.ssl_check` and `body.type` of whatever the body parses to, so a signed `null` (JSON, or
 * `payload=null` in a form) threw a TypeError outside any handler and ended the process. Parsing
 * follows Bolt's rules: a form's `payload` field is JSON, any other form is its fields, else JSON.
 */
export function slackBodyProblem(rawBody: Buffer, contentType: string | undefined): string | undefined {
  const text = rawBody.toString('utf8');
  let parsed: unknown;
  try {
    if (contentType === 'application/x-www-form-urlencoded') {
      const form = parseQuery(text);
      if (form.payload === undefined) return undefined;
      if (typeof form.payload !== 'string') return 'the form carries more than one payload field';
      parsed = JSON.parse(form.payload);
    } else {
      parsed = JSON.parse(text);
    }
  } catch {
    return 'the body is not valid JSON';
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'the body is not a JSON object';
  return undefined;
}

/** Bolt's request listener behind a check of the (already read) body: a malformed one is a 400, never a crash. */
function guardedListener(listener: RequestListener, logger: Logger): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const rawBody = (req as IncomingMessage & { rawBody?: Buffer }).rawBody;
    const problem = req.method === 'POST' && rawBody ? slackBodyProblem(rawBody, req.headers['content-type']) : undefined;
    if (problem) {
      logger.warn({ path: req.url, problem }, 'malformed Slack request refused');
      const text = JSON.stringify({ error: `malformed request: ${problem}` });
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    listener(req, res);
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
    requestListener: receiver ? guardedListener(receiver.requestListener, deps.logger) : undefined,
    start: async () => {
      if (config.slack.socketMode) await app.start();
    },
    stop: async () => {
      if (config.slack.socketMode) await app.stop();
    },
  };
}
