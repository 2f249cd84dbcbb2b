// OAuth mode: Slack's v2 install flow (/slack/install, /slack/oauth_redirect) through @slack/oauth's
// InstallProvider over the Postgres installation store, and what a reinstall resumes.
import type { Installation, InstallURLOptions, Logger as BoltLogger } from '@slack/bolt';
import { InstallProvider, type CallbackOptions } from '@slack/oauth';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { SlackOAuthConfig } from '../config.js';
import type { Db } from '../store/db.js';
import { createInstallationStore, resumeWorkspaces, teamsOfInstallation, type PostgresInstallationStore } from '../store/installations.js';
import { createTokenCipher } from '../store/token-cipher.js';
import { slackLibraryLogger } from './log-format.js';

export const INSTALL_PATH = '/slack/install';
export const REDIRECT_PATH = '/slack/oauth_redirect';

export interface SlackInstaller {
  provider: InstallProvider;
  store: PostgresInstallationStore;
  /** Serves the install page and the OAuth callback; false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
}

export interface InstallerOptions {
  oauth: SlackOAuthConfig;
  db: Db;
  logger: Logger;
  /** The Web API base (SLACK_API_URL); Slack's authorize page is served beside it, at `../oauth/v2/authorize`. */
  apiUrl: string | undefined;
  /** This bot's public base URL: the callback's redirect_uri; unset = the one set in the Slack app. */
  publicUrl: string | undefined;
}

/** @slack/oauth's logger over pino. Installation queries are logged (ids only); tokens never reach it. */
export function oauthLogger(logger: Logger): BoltLogger {
  return slackLibraryLogger(logger, 'slack-oauth');
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res: ServerResponse, status: number, title: string, body: string): void {
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${body}</p></body></html>`;
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

/** Builds the installer (the state is signed with SLACK_STATE_SECRET and bound to the browser by a cookie). */
export function createSlackInstaller(options: InstallerOptions): SlackInstaller {
  const { oauth, db, logger } = options;
  const store = createInstallationStore(db, createTokenCipher(oauth.tokenKey));
  const installUrlOptions: InstallURLOptions = {
    scopes: oauth.scopes,
    ...(options.publicUrl ? { redirectUri: `${options.publicUrl.replace(/\/+$/, '')}${REDIRECT_PATH}` } : {}),
  };
  const provider = new InstallProvider({
    clientId: oauth.clientId,
    clientSecret: oauth.clientSecret,
    stateSecret: oauth.stateSecret,
    installationStore: store,
    installUrlOptions,
    logger: oauthLogger(logger),
    ...(options.apiUrl ? { clientOptions: { slackApiUrl: options.apiUrl }, authorizationUrl: new URL('../oauth/v2/authorize', options.apiUrl).toString() } : {}),
  });

  const callbackOptions: CallbackOptions = {
    successAsync: async (installation, _options, _req, res) => {
      const where = installation.isEnterpriseInstall ? { enterpriseId: installation.enterprise?.id } : { teamId: installation.team?.id };
      const resumed = await teamsOfInstallation(db, installation as Installation)
        .then((teams) => resumeWorkspaces(db, teams))
        .catch((error: unknown) => {
          logger.error({ err: error, ...where }, 'installed, but the work waiting in this workspace could not be resumed');
          return undefined;
        });
      logger.info({ ...where, isEnterpriseInstall: installation.isEnterpriseInstall === true, ...resumed }, 'Slack app installed');
      const name = installation.isEnterpriseInstall ? installation.enterprise?.name : installation.team?.name;
      page(res, 200, 'Verdict is installed', `Verdict is installed in ${escapeHtml(name ?? 'your workspace')}. Mention <b>@verdict</b> in a channel to start a loop.`);
    },
    failureAsync: async (error, _options, _req, res) => {
      logger.warn({ code: error.code, reason: error.message }, 'Slack install refused');
      page(res, 400, 'Installation failed', `${escapeHtml(error.message)} Start again from <a href="${INSTALL_PATH}">${INSTALL_PATH}</a>.`);
    },
  };

  const failed = (res: ServerResponse) => (error: unknown) => {
    logger.error({ err: error }, 'Slack install page failed');
    if (!res.headersSent) page(res, 500, 'Installation failed', 'Something went wrong on our side; try again.');
  };
  return {
    provider,
    store,
    handle: (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== INSTALL_PATH && path !== REDIRECT_PATH) return false;
      if (req.method !== 'GET') {
        page(res, 405, 'Method not allowed', 'Open this page in a browser.');
        return true;
      }
      if (path === INSTALL_PATH) provider.handleInstallPath(req, res, undefined, installUrlOptions).catch(failed(res));
      else provider.handleCallback(req, res, callbackOptions, installUrlOptions).catch(failed(res));
      return true;
    },
  };
}
