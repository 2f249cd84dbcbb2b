// The Web API clients of the workspace a write goes to: one bot token (single-workspace mode), or the
// token each workspace installed the bot with (OAuth mode), rotated where the app enables rotation.
import type { InstallProvider } from '@slack/oauth';
import { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SecretScrubber } from '../logger.js';
import type { Db } from '../store/db.js';
import { installationQueryForTeam } from '../store/installations.js';
import { slackLibraryLogger } from './log-format.js';

export interface SlackClients {
  /** Writes: never retried blindly; rate limits surface as errors the poster handles. */
  writer: WebClient;
  /** Reads: retried by the WebClient with backoff. */
  reader: WebClient;
}

export function createSlackClients(token: string, apiUrl: string | undefined, logger: Logger): SlackClients {
  const base = apiUrl ? { slackApiUrl: apiUrl } : {};
  const slackLogger = slackLibraryLogger(logger, 'slack-web-api', { quiet: true });
  return {
    writer: new WebClient(token, {
      ...base,
      logger: slackLogger,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: 15_000,
    }),
    reader: new WebClient(token, {
      ...base,
      logger: slackLogger,
      retryConfig: { retries: 4, factor: 2, minTimeout: 200, maxTimeout: 5_000 },
      timeout: 15_000,
    }),
  };
}

export interface WorkspaceClients {
  /**
   * The clients that write to `teamId` with its own token; undefined when the workspace has no
   * installation (uninstalled, or its tokens revoked): its work then waits, silently, for a reinstall.
   */
  forTeam(teamId: string): Promise<SlackClients | undefined>;
  /** True in OAuth mode: a token Slack refuses means the workspace is gone, not a failed write. */
  readonly perWorkspace: boolean;
}

/** Thrown where a workspace's write finds no usable token: the job ends quietly, its work stays for a reinstall. */
export class WorkspaceUnavailable extends Error {
  constructor(readonly teamId: string, reason: string) {
    super(`workspace ${teamId} has no usable Slack installation (${reason})`);
    this.name = 'WorkspaceUnavailable';
  }
}

/** Slack's answers to a token it no longer takes: the app was uninstalled or its token revoked or expired. */
const DEAD_TOKEN = new Set(['invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'token_expired', 'team_disabled', 'app_uninstalled', 'team_not_found']);

export function isDeadTokenError(error: unknown): boolean {
  const e = error as { code?: string; data?: { error?: string } };
  return e?.code === 'slack_webapi_platform_error' && DEAD_TOKEN.has(e.data?.error ?? '');
}

/** Accepts the clients of one token where a per-workspace source is expected (single-workspace mode, tests). */
export function asWorkspaceClients(clients: SlackClients | WorkspaceClients): WorkspaceClients {
  if ('forTeam' in clients) return clients;
  return { forTeam: async () => clients, perWorkspace: false };
}

/** How many workspaces' clients stay built; a token seen again after eviction just builds new ones. */
const MAX_CACHED_CLIENTS = 256;

/**
 * Clients per installed workspace. Each call reads the installation (through the installer's
 * authorize, which refreshes a token that expires within two hours and stores the new one), so an
 * uninstall is seen at the next write; clients are reused per token. Every token read is added to
 * the scrubber, so no log line, post or model request can carry it.
 */
export function installedWorkspaceClients(deps: {
  db: Db;
  installer: Pick<InstallProvider, 'authorize'>;
  apiUrl: string | undefined;
  logger: Logger;
  scrubber: SecretScrubber;
}): WorkspaceClients {
  const byToken = new Map<string, SlackClients>();
  // Calls for one workspace at the same moment share one read, so a token due for rotation is refreshed once per process.
  const inFlight = new Map<string, Promise<SlackClients | undefined>>();
  const resolve = async (teamId: string): Promise<SlackClients | undefined> => {
    const query = await installationQueryForTeam(deps.db, teamId);
    if (!query) return undefined;
    let token: string | undefined;
    try {
      token = (await deps.installer.authorize(query)).botToken;
    } catch (error) {
      // Deleted between the two reads (an uninstall just now), or not decryptable: no token to write with.
      deps.logger.warn({ teamId, err: error }, 'could not read the workspace installation');
      return undefined;
    }
    if (!token) return undefined;
    deps.scrubber.add(token);
    let clients = byToken.get(token);
    if (!clients) {
      if (byToken.size >= MAX_CACHED_CLIENTS) byToken.delete(byToken.keys().next().value!);
      clients = createSlackClients(token, deps.apiUrl, deps.logger);
      byToken.set(token, clients);
    }
    return clients;
  };
  return {
    perWorkspace: true,
    forTeam: (teamId) => {
      let pending = inFlight.get(teamId);
      if (!pending) {
        pending = resolve(teamId).finally(() => inFlight.delete(teamId));
        inFlight.set(teamId, pending);
      }
      return pending;
    },
  };
}
