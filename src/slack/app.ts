// Bolt wiring: Socket Mode when an app-level token is set, HTTP mode (/slack/events) otherwise.
import { App, HTTPReceiver, SocketModeReceiver, type Logger as BoltLogger } from '@slack/bolt';
import type { FetchFunction, RetryOptions, WebClientOptions } from '@slack/web-api';
import type { RequestListener } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { describeError, StartupError } from '@verdict/runtime/startup-error';
import { CheckedReceiver, guardSlackRequests } from './inbound-payloads.js';
import { registerListeners, type ListenerDeps } from './listeners/index.js';
import { slackLibraryLogger } from './log-format.js';
import type { SlackInstaller } from './oauth.js';

/** Socket Mode connection state as the socket-mode client reports it; 'none' in HTTP mode. */
export type SocketState = 'none' | 'connecting' | 'connected' | 'reconnecting' | 'disconnected';

export interface SlackApp {
  app: App;
  /** In HTTP mode, the handler for Slack's requests, mounted on the bot's HTTP server. */
  requestListener: RequestListener | undefined;
  socketState(): SocketState;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Start-up calls (auth.test, apps.connections.open) retry 3 times over about 7 s, 5 s per try. */
export const STARTUP_RETRIES = { retries: 3, factor: 2, minTimeout: 1000, maxTimeout: 4000, randomize: false } as const;
const SLACK_TIMEOUT_MS = 5000;
/** Once connected, Socket Mode reconnects keep the socket-mode client's own patient policy. */
const RECONNECT_RETRIES = { retries: 100, factor: 1.3, minTimeout: 1000, maxTimeout: 60_000, randomize: false } as const;

/** Bolt's logger: the Web API client logs each failed request as "http request failed <cause>"; the
 * retry policy's own line (method, attempt, delay) says it better, so that one stays at debug. */
function boltLogger(logger: Logger): BoltLogger {
  return slackLibraryLogger(logger, 'bolt', { demote: (text) => text.startsWith('http request failed') });
}

interface WebApiErrorLike {
  code?: string;
  data?: { error?: string };
  statusCode?: number;
  /** The fetch failure behind a request error: undici's "fetch failed", with the socket's error as its cause. */
  original?: { message?: string; code?: string; cause?: { message?: string; code?: string } };
  attemptNumber?: number;
  retriesLeft?: number;
  message?: string;
}

/** Why a request did not reach Slack, in the socket's words ("connect ECONNREFUSED …") rather than fetch's. */
function requestCause(e: WebApiErrorLike): string | undefined {
  const original = e.original;
  return original?.cause?.message || original?.cause?.code || original?.message || original?.code || undefined;
}

/**
 * A Web API retry policy that logs every retry with its method, attempt and delay. The object is
 * kept by reference by the client, so {@link RetryPolicy.relax} changes the policy of later calls.
 */
interface RetryPolicy {
  options: RetryOptions;
  clientOptions: Pick<WebClientOptions, 'retryConfig' | 'fetch' | 'timeout'>;
  relax(): void;
}

function retryPolicy(logger: Logger, what: string): RetryPolicy {
  let lastUrl: string | undefined;
  // The Web API client calls fetch for every attempt; the URL names the method in the retry log.
  const fetch: FetchFunction = (url, init) => {
    lastUrl = String(url);
    return globalThis.fetch(url, init);
  };
  // p-retry (under the Web API client) calls onFailedAttempt with attemptNumber and retriesLeft set.
  const options: RetryOptions & { onFailedAttempt(error: unknown): void } = {
    ...STARTUP_RETRIES,
    onFailedAttempt: (error: unknown) => {
      const e = error as WebApiErrorLike;
      const url = lastUrl ?? '';
      const method = url.split('/').pop() || 'unknown';
      const attempt = e.attemptNumber ?? 0;
      const retriesLeft = e.retriesLeft ?? 0;
      const delayMs = Math.min(options.maxTimeout ?? Infinity, (options.minTimeout ?? 1000) * (options.factor ?? 2) ** (attempt - 1));
      const cause = requestCause(e) ?? describeError(error);
      if (retriesLeft > 0) logger.warn({ component: 'slack-web-api', client: what, method, attempt, retriesLeft, delayMs, cause }, `Slack ${method} failed; retrying in ${delayMs} ms`);
      else logger.warn({ component: 'slack-web-api', client: what, method, attempt, cause }, `Slack ${method} failed; no retry left`);
    },
  };
  return {
    options,
    clientOptions: {
      retryConfig: options,
      timeout: SLACK_TIMEOUT_MS,
      fetch,
    },
    relax: () => Object.assign(options, RECONNECT_RETRIES),
  };
}

const REJECTED_TOKEN = new Set(['invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'token_expired', 'not_allowed_token_type', 'team_disabled', 'user_removed_from_team']);

/** Turns a failed auth.test or apps.connections.open into one line naming the token it was about. */
function slackStartError(error: unknown, token: 'SLACK_BOT_TOKEN' | 'SLACK_APP_TOKEN', apiUrl: string): StartupError {
  const e = error as WebApiErrorLike;
  const purpose = token === 'SLACK_BOT_TOKEN' ? 'verify SLACK_BOT_TOKEN' : 'open a Socket Mode connection with SLACK_APP_TOKEN';
  if (e.code === 'slack_webapi_platform_error' && e.data?.error && REJECTED_TOKEN.has(e.data.error)) {
    const where =
      token === 'SLACK_BOT_TOKEN'
        ? 'copy the Bot User OAuth Token (xoxb-...) from "OAuth & Permissions" in your Slack app'
        : 'create an app-level token with the connections:write scope under "Basic Information" in your Slack app, and turn Socket Mode on';
    return new StartupError(token, `Slack rejected ${token} (${e.data.error}): ${where}`, { cause: error });
  }
  if (e.code === 'slack_webapi_request_error') {
    const cause = requestCause(e) ?? describeError(error);
    return new StartupError(token, `cannot reach Slack at ${apiUrl} to ${purpose}: ${cause} (check the network, or SLACK_API_URL)`, { cause: error });
  }
  if (e.code === 'slack_webapi_http_error') {
    return new StartupError(token, `Slack at ${apiUrl} answered HTTP ${e.statusCode} when asked to ${purpose} (check SLACK_API_URL)`, { cause: error });
  }
  return new StartupError(token, `could not ${purpose} at ${apiUrl}: ${describeError(error)}`, { cause: error });
}

/**
 * The Bolt app. With `installer` (OAuth mode) each request is authorized with its workspace's
 * installation (Bolt's `authorize`, which also rotates tokens); else with SLACK_BOT_TOKEN.
 */
export async function createSlackApp(config: Config, deps: ListenerDeps, installer?: SlackInstaller): Promise<SlackApp> {
  const logger = boltLogger(deps.logger);
  const apiUrl = config.slack.apiUrl ?? 'https://slack.com/api/';
  const botPolicy = retryPolicy(deps.logger, 'bot');
  const clientOptions: WebClientOptions = { ...(config.slack.apiUrl ? { slackApiUrl: config.slack.apiUrl } : {}), ...botPolicy.clientOptions };
  // One bot token, verified at init (auth.test); or each workspace's own, found per request.
  const auth = installer ? { authorize: (source: Parameters<SlackInstaller['provider']['authorize']>[0]) => installer.provider.authorize(source) } : { token: config.slack.botToken! };
  let app: App;
  let receiver: HTTPReceiver | undefined;
  let socketState: SocketState = 'none';
  let socketPolicy: RetryPolicy | undefined;
  if (config.slack.socketMode) {
    socketPolicy = retryPolicy(deps.logger, 'socket');
    const socketReceiver = new SocketModeReceiver({
      appToken: config.slack.appToken!,
      logger,
      // Bolt hands the socket-mode client only these options: without them it ignores SLACK_API_URL.
      installerOptions: { clientOptions: { ...(config.slack.apiUrl ? { slackApiUrl: config.slack.apiUrl } : {}), ...socketPolicy.clientOptions } },
    });
    socketState = 'connecting';
    for (const state of ['connecting', 'connected', 'reconnecting', 'disconnected'] as const) {
      socketReceiver.client.on(state, () => {
        if (state !== socketState) deps.logger.info({ component: 'slack-socket', state }, `Socket Mode ${state}`);
        socketState = state;
      });
    }
    app = new App({
      ...auth,
      // Envelope payloads pass the same check as HTTP bodies (src/slack/inbound-payloads.ts).
      receiver: new CheckedReceiver(socketReceiver, deps.logger),
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
    app = new App({ ...auth, receiver, clientOptions, logger, deferInitialization: true });
  }
  app.error(async (error) => {
    if (installer && error.code === 'slack_bolt_authorization_error') {
      // A workspace without an installation (uninstalled): nothing to do, and no retry would change that.
      deps.logger.warn({ reason: error.message }, 'Slack request from a workspace without an installation ignored');
      return;
    }
    deps.logger.error({ err: error }, 'slack listener failed');
    throw error;
  });
  registerListeners(app, deps);
  try {
    await app.init();
  } catch (error) {
    throw slackStartError(error, 'SLACK_BOT_TOKEN', apiUrl);
  }
  return {
    app,
    requestListener: receiver ? guardSlackRequests(receiver.requestListener, { signingSecret: config.slack.signingSecret!, logger: deps.logger }) : undefined,
    socketState: () => socketState,
    start: async () => {
      if (!config.slack.socketMode) return;
      try {
        await app.start();
      } catch (error) {
        throw slackStartError(error, 'SLACK_APP_TOKEN', apiUrl);
      }
      socketPolicy?.relax();
    },
    stop: async () => {
      if (config.slack.socketMode) await app.stop();
    },
  };
}
