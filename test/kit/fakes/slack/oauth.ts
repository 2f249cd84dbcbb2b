// Slack's OAuth v2 for the fake: the authorize page's approval (a code for a workspace), oauth.v2.access
// (the code, or a refresh token, for a bot token), and the revocation an uninstall makes.
import { randomBytes } from 'node:crypto';
import type { FakeSlackTeam } from './types.js';
import { fail, ok, str, type Answer, type Team } from './wire.js';

/** A token the fake issued through OAuth, and what it stands for now. */
export interface IssuedToken {
  token: string;
  team: Team;
  isEnterpriseInstall: boolean;
  revoked: boolean;
  /** Seconds since the epoch (token rotation only). */
  expiresAt?: number;
}

interface PendingCode {
  team: Team;
  isEnterpriseInstall: boolean;
  redirectUri: string | undefined;
  scopes: string;
  userId: string;
  used: boolean;
}

export interface OAuthOptions {
  clientId: string;
  clientSecret: string;
  /** With rotation, bot tokens expire after this many seconds and come with a refresh token. */
  tokenRotation?: { expiresInSeconds: number };
}

export interface ApproveInstallInput {
  /** The authorize URL the bot's install page links to (its `href`). */
  authorizeUrl: string;
  /** The workspace the person installs into (its org for an org-wide install). */
  team: FakeSlackTeam;
  isEnterpriseInstall?: boolean;
  /** Where Slack sends the browser back when the URL has no redirect_uri (the app's configured one). */
  redirectUri?: string;
  userId?: string;
}

export interface FakeOAuth {
  /** The person clicks Allow: the URL Slack redirects the browser to, with a fresh code and the state it was given. */
  approveInstall(input: ApproveInstallInput): string;
  /** oauth.v2.access: needs no token. */
  access(args: Record<string, unknown>): Answer;
  /** Why Slack refuses a token it issued (revoked or expired), or undefined. */
  tokenProblem(token: string): string | undefined;
  teamOfToken(token: string): IssuedToken | undefined;
  /** The app is uninstalled from the workspace (or org): every token issued for it stops working. */
  uninstall(id: string): void;
  /** Tokens issued for a workspace (or org), oldest first. */
  tokensOf(id: string): IssuedToken[];
  /** Every token and refresh token issued, for leak checks. */
  secrets(): string[];
}

export function createFakeOAuth(options: OAuthOptions | undefined, toTeam: (team: FakeSlackTeam) => Team): FakeOAuth {
  const codes = new Map<string, PendingCode>();
  const tokens = new Map<string, IssuedToken>();
  // Reusable until the app is uninstalled: replicas refreshing at once must not lock each other out.
  const refreshTokens = new Map<string, { team: Team; isEnterpriseInstall: boolean; scopes: string; revoked: boolean }>();
  const ownerOf = (issued: { team: Team; isEnterpriseInstall: boolean }) => (issued.isEnterpriseInstall ? issued.team.enterpriseId! : issued.team.teamId);

  const issue = (team: Team, isEnterpriseInstall: boolean, scopes: string) => {
    const token = `xoxb-${team.teamId}-${randomBytes(12).toString('hex')}`;
    const now = Math.floor(Date.now() / 1000);
    const rotation = options?.tokenRotation;
    const record: IssuedToken = { token: rotation ? `xoxe.${token}` : token, team, isEnterpriseInstall, revoked: false, ...(rotation ? { expiresAt: now + rotation.expiresInSeconds } : {}) };
    tokens.set(record.token, record);
    const refresh = rotation ? `xoxe-1-${randomBytes(16).toString('hex')}` : undefined;
    if (refresh) refreshTokens.set(refresh, { team, isEnterpriseInstall, scopes, revoked: false });
    return {
      access_token: record.token,
      token_type: 'bot',
      scope: scopes,
      bot_user_id: team.botUserId,
      ...(rotation ? { refresh_token: refresh, expires_in: rotation.expiresInSeconds } : {}),
    };
  };

  return {
    approveInstall: (input) => {
      if (!options) throw new Error('fake Slack: start it with `oauth` options to install through OAuth');
      const url = new URL(input.authorizeUrl);
      if (url.searchParams.get('client_id') !== options.clientId) throw new Error(`fake Slack: the authorize URL names client_id ${url.searchParams.get('client_id')}`);
      const scopes = url.searchParams.get('scope') ?? '';
      if (!scopes) throw new Error('fake Slack: the authorize URL asks for no scope');
      const redirect = url.searchParams.get('redirect_uri') ?? input.redirectUri;
      if (!redirect) throw new Error('fake Slack: no redirect_uri in the URL and none configured');
      const team = toTeam(input.team);
      if (input.isEnterpriseInstall && !team.enterpriseId) throw new Error('fake Slack: an org-wide install needs the team\'s enterpriseId');
      const code = `code-${randomBytes(10).toString('hex')}`;
      codes.set(code, {
        team,
        isEnterpriseInstall: input.isEnterpriseInstall === true,
        redirectUri: url.searchParams.get('redirect_uri') ?? undefined,
        scopes,
        userId: input.userId ?? 'UINSTALLER',
        used: false,
      });
      const back = new URL(redirect);
      back.searchParams.set('code', code);
      const state = url.searchParams.get('state');
      if (state !== null) back.searchParams.set('state', state);
      return back.toString();
    },
    access: (args) => {
      if (!options) return fail('invalid_client_id');
      if (str(args.client_id) !== options.clientId) return fail('invalid_client_id');
      if (str(args.client_secret) !== options.clientSecret) return fail('bad_client_secret');
      if (str(args.grant_type) === 'refresh_token') {
        const refresh = refreshTokens.get(str(args.refresh_token) ?? '');
        if (!refresh || refresh.revoked) return fail('invalid_refresh_token');
        const t = refresh.team;
        return ok({
          app_id: t.appId,
          ...issue(t, refresh.isEnterpriseInstall, refresh.scopes),
          team: refresh.isEnterpriseInstall ? null : { id: t.teamId, name: t.teamName },
          enterprise: t.enterpriseId ? { id: t.enterpriseId, name: `Org ${t.enterpriseId}` } : null,
          is_enterprise_install: refresh.isEnterpriseInstall,
        });
      }
      const pending = codes.get(str(args.code) ?? '');
      if (!pending || pending.used) return fail('invalid_code');
      pending.used = true;
      if (pending.redirectUri !== undefined && str(args.redirect_uri) !== pending.redirectUri) return fail('bad_redirect_uri');
      const t = pending.team;
      return ok({
        app_id: t.appId,
        authed_user: { id: pending.userId },
        ...issue(t, pending.isEnterpriseInstall, pending.scopes),
        team: pending.isEnterpriseInstall ? null : { id: t.teamId, name: t.teamName },
        enterprise: t.enterpriseId ? { id: t.enterpriseId, name: `Org ${t.enterpriseId}` } : null,
        is_enterprise_install: pending.isEnterpriseInstall,
      });
    },
    tokenProblem: (token) => {
      const issued = tokens.get(token);
      if (!issued) return undefined;
      if (issued.revoked) return 'token_revoked';
      if (issued.expiresAt !== undefined && issued.expiresAt < Date.now() / 1000) return 'token_expired';
      return undefined;
    },
    teamOfToken: (token) => tokens.get(token),
    uninstall: (id) => {
      for (const issued of tokens.values()) if (ownerOf(issued) === id) issued.revoked = true;
      for (const refresh of refreshTokens.values()) if (ownerOf(refresh) === id) refresh.revoked = true;
    },
    tokensOf: (id) => [...tokens.values()].filter((t) => ownerOf(t) === id),
    secrets: () => [...tokens.keys(), ...refreshTokens.keys()],
  };
}
