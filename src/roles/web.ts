// The web role: the HTTP server (health, platform webhooks, Slack's requests in HTTP mode) and the
// Bolt app (Socket Mode's socket when an app token is set). It stores triggers and answers; it runs no turn.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { portError } from '../http/port.js';
import { sendJson, startHttpServer } from '../http/server.js';
import { createWebhookRoute } from '../http/webhook-route.js';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { createSlackApp, type SlackApp } from '../slack/app.js';
import { createSlackInstaller } from '../slack/oauth.js';
import type { ListenerDeps } from '../slack/listeners/index.js';
import type { Db } from '../store/db.js';
import { createGroupCommit } from '../store/group-commit.js';
import { enqueueSlackTriggers, type SlackTriggerInput, type EnqueueResult } from '../store/triggers.js';
import { WEBHOOK_PATH } from '../http/server.js';

export interface WebRole {
  url: string;
  /** Opens the Socket Mode connection (HTTP mode: nothing) and turns /healthz from "starting" to ok. */
  open(): Promise<void>;
  stop(): Promise<void>;
}

export interface WebRoleOptions {
  config: Config;
  db: Db;
  logger: Logger;
  host?: string;
  /** The platform's webhook signing secret; read at each delivery (the in-process sandbox sets it after start). */
  webhookSecret(): string;
  enqueueHome: ListenerDeps['enqueueHome'];
}

/**
 * Slack events that arrive while earlier ones are being written share the next statement (group
 * commit), as webhooks do: under a burst one commit answers many acks, and none is answered before
 * its trigger is durable. At most `SLACK_INGEST_SLOTS` connections write at once.
 */
const SLACK_INGEST_BATCH = 64;
const SLACK_INGEST_SLOTS = 1;

export async function startWebRole(options: WebRoleOptions): Promise<WebRole> {
  const { config, db, logger } = options;
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) => logger.warn({ err: error }, 'shutdown step failed'));
    }
  };
  try {
    // The HTTP server comes up before Slack is verified, so /healthz answers (503, "starting")
    // during the rest of start-up; Slack's requests wait for the app (503: Slack redelivers).
    let slack: SlackApp | undefined;
    let ready = false;
    // OAuth mode: the install page and its callback, on this server in both Slack modes.
    const installer = config.slack.oauth
      ? createSlackInstaller({ oauth: config.slack.oauth, db, logger, apiUrl: config.slack.apiUrl, publicUrl: config.publicUrl })
      : undefined;
    const webhook = createWebhookRoute({
      db,
      logger,
      get secret() {
        return options.webhookSecret();
      },
      eventRetryAttempts: config.agent.eventRetryAttempts,
    });
    const http = await startHttpServer({
      db,
      logger,
      port: config.port,
      ...(options.host ? { host: options.host } : {}),
      slack: config.slack.socketMode
        ? undefined
        : (req, res) => (slack?.requestListener ? slack.requestListener(req, res) : sendJson(res, 503, { error: 'starting, retry later' })),
      webhook,
      ...(installer ? { install: installer.handle } : {}),
      starting: () => !ready,
      ...(config.slack.socketMode ? { socketState: () => slack?.socketState() ?? 'connecting' } : {}),
    }).catch((error: unknown) => {
      throw portError(config.port, error);
    });
    cleanups.push(() => http.close());

    const slackIngest = createGroupCommit<SlackTriggerInput, EnqueueResult | undefined>({
      maxBatch: SLACK_INGEST_BATCH,
      maxInFlight: SLACK_INGEST_SLOTS,
      flush: (items) => {
        logger.debug({ events: items.length }, 'slack ingest: one statement');
        return enqueueSlackTriggers(db, items);
      },
    });
    slack = await createSlackApp(config, {
      db,
      logger,
      enqueueHome: options.enqueueHome,
      enqueueTrigger: (target, input) => slackIngest.submit({ target, input }),
      adminUserIds: config.spending.adminUserIds,
      ...(installer ? { installations: installer.store } : {}),
    }, installer);
    const slackApp = slack;

    // A platform of our own (not the sandbox) learns where to send its webhooks from the web role.
    if (config.platform.apiUrl && config.publicUrl) {
      const platform = createHttpPlatform({ baseUrl: config.platform.apiUrl, token: config.platform.apiToken! });
      await platform
        .registerWebhook(`${config.publicUrl.replace(/\/+$/, '')}${WEBHOOK_PATH}`)
        .catch((error: unknown) => logger.warn({ err: error }, 'could not register the webhook URL with the platform'));
    }
    return {
      url: http.url,
      open: async () => {
        await slackApp.start();
        cleanups.push(() => slackApp.stop());
        ready = true;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
