// End to end in OAuth mode: the bot installed through /slack/install in two workspaces of one
// deployment, each written to with its own token; an uninstall mid-loop and a reinstall; forged
// states refused; tokens never in the logs or the database in clear; token rotation.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appUninstalled, sendEvent, startMiniSlack, tokensRevoked, type FakeSlackTeam, type SlackCall } from '../kit/fakes/slack/index.js';
import { isVerdict, startHarness, type Harness } from '../kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';
import { sleep, waitUntil } from '../kit/wait.js';

const OWNER = 'UOWNER';
const CLIENT_ID = '1111.2222';
const CLIENT_SECRET = `client-secret-${randomBytes(8).toString('hex')}`;
const STATE_SECRET = `state-secret-${randomBytes(8).toString('hex')}`;
const TOKEN_KEY = randomBytes(32).toString('hex');
const ALPHA: FakeSlackTeam = { teamId: 'TALPHA', teamName: 'Alpha Lab', domain: 'alpha' };
const BETA: FakeSlackTeam = { teamId: 'TBETA', teamName: 'Beta Partners', domain: 'beta' };
const CHANNEL_OF: Record<string, string> = { TALPHA: 'CALPHA', TBETA: 'CBETA' };

function oauthEnv(): Record<string, string> {
  return { SLACK_BOT_TOKEN: '', SLACK_CLIENT_ID: CLIENT_ID, SLACK_CLIENT_SECRET: CLIENT_SECRET, SLACK_STATE_SECRET: STATE_SECRET, SLACK_TOKEN_KEY: TOKEN_KEY };
}

/** Opens the install page as a browser does: the Add to Slack link and the state cookie it sets. */
async function openInstallPage(h: Harness): Promise<{ authorizeUrl: string; cookie: string }> {
  const page = await fetch(`${h.url()}/slack/install`);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('Add to Slack');
  const href = /<a href="([^"]+)"/.exec(html)?.[1];
  expect(href).toBeDefined();
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0]!;
  expect(cookie).toMatch(/^slack-app-oauth-state=./);
  return { authorizeUrl: href!.replace(/&amp;/g, '&'), cookie };
}

/** The whole flow: install page, Slack's approval, the callback with the browser's cookie. Returns the bot token Slack issued. */
async function install(h: Harness, team: FakeSlackTeam): Promise<string> {
  const { authorizeUrl, cookie } = await openInstallPage(h);
  const url = new URL(authorizeUrl);
  expect(url.origin + url.pathname).toBe(`${h.slack.baseUrl}/oauth/v2/authorize`);
  expect(url.searchParams.get('scope')).toContain('app_mentions:read');
  const back = h.slack.oauth.approveInstall({ authorizeUrl, team, redirectUri: `${h.url()}/slack/oauth_redirect` });
  const res = await fetch(back, { headers: { cookie } });
  const body = await res.text();
  expect(res.status, body).toBe(200);
  expect(body).toContain(`installed in ${team.teamName}`);
  return h.slack.oauth.tokensOf(team.teamId).at(-1)!.token;
}

async function mentionIn(h: Harness, team: FakeSlackTeam): Promise<string> {
  const sent = await h.mention({ user: OWNER, text: SEED_MESSAGE, channel: CHANNEL_OF[team.teamId]!, team: team.teamId });
  expect(sent.status).toBe(200);
  return sent.ts;
}

const writes = (calls: readonly SlackCall[]) => calls.filter((c) => !['auth.test', 'oauth.v2.access'].includes(c.method));

/** Log lines at `level` or above (pino: 40 warn, 50 error). */
function linesAtLeast(logs: string, level: number): string[] {
  return logs.split('\n').filter((line) => {
    try {
      return (JSON.parse(line) as { level?: number }).level! >= level;
    } catch {
      return false;
    }
  });
}

describe('OAuth mode: installed in two workspaces at once', () => {
  let h: Harness;
  const tokens: Record<string, string> = {};
  const threads: Record<string, string> = {};

  beforeAll(async () => {
    h = await startHarness({
      script: loopScript(),
      env: oauthEnv(),
      slackOptions: { rejectUnknownTokens: true, oauth: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } },
    });
  }, 120_000);
  afterAll(async () => h?.stop());

  it('installs from /slack/install to a stored installation, its token sealed', async () => {
    tokens.TALPHA = await install(h, ALPHA);
    tokens.TBETA = await install(h, BETA);
    expect(tokens.TALPHA).not.toBe(tokens.TBETA);
    const exchanges = h.slack.callsTo('oauth.v2.access');
    expect(exchanges).toHaveLength(2);
    for (const call of exchanges) expect(call.args).toMatchObject({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
    const rows = await sql<{ install_key: string; team_id: string; bot_user_id: string; text: string }>`
      select install_key, team_id, bot_user_id, i::text as text from slack_installations i order by install_key`.execute(h.db.db);
    expect(rows.rows.map((r) => [r.install_key, r.team_id, r.bot_user_id])).toEqual([
      ['T:TALPHA', 'TALPHA', 'UBOT'],
      ['T:TBETA', 'TBETA', 'UBOT'],
    ]);
    for (const row of rows.rows) for (const token of Object.values(tokens)) expect(row.text).not.toContain(token);
  });

  it('refuses a forged state, a state without its browser cookie, and a reused code', async () => {
    const before = h.slack.callsTo('oauth.v2.access').length;
    const stranger: FakeSlackTeam = { teamId: 'TMALLORY' };
    const redirectUri = `${h.url()}/slack/oauth_redirect`;
    // A state the bot never signed, with a matching cookie (an attacker controls both).
    const { authorizeUrl } = await openInstallPage(h);
    const forged = new URL(authorizeUrl);
    forged.searchParams.set('state', 'eyJhbGciOiJIUzI1NiJ9.eyJpbnN0YWxsT3B0aW9ucyI6e319.forged');
    const forgedBack = h.slack.oauth.approveInstall({ authorizeUrl: forged.toString(), team: stranger, redirectUri });
    const forgedRes = await fetch(forgedBack, { headers: { cookie: `slack-app-oauth-state=${forged.searchParams.get('state')}` } });
    expect(forgedRes.status).toBe(400);
    expect(await forgedRes.text()).toContain('Installation failed');
    // A genuine state, but from another browser: no cookie.
    const genuine = await openInstallPage(h);
    const noCookie = await fetch(h.slack.oauth.approveInstall({ authorizeUrl: genuine.authorizeUrl, team: stranger, redirectUri }));
    expect(noCookie.status).toBe(400);
    // No code was exchanged, nothing was stored.
    expect(h.slack.callsTo('oauth.v2.access')).toHaveLength(before);
    // A callback replayed (same cookie, state and code): Slack's code is single-use, so the exchange fails and nothing is stored.
    const replay = await openInstallPage(h);
    const back = h.slack.oauth.approveInstall({ authorizeUrl: replay.authorizeUrl, team: stranger, redirectUri });
    const first = await fetch(back, { headers: { cookie: replay.cookie } });
    expect(first.status).toBe(200);
    await h.db.db.deleteFrom('slack_installations').where('team_id', '=', 'TMALLORY').execute();
    const again = await fetch(back, { headers: { cookie: replay.cookie } });
    expect(again.status).toBe(400);
    const exchanges = h.slack.callsTo('oauth.v2.access').slice(before);
    expect(exchanges.map((c) => (c.response as { ok: boolean; error?: string }).error ?? 'ok')).toEqual(['ok', 'invalid_code']);
    const stored = await sql<{ n: string }>`select count(*) as n from slack_installations where team_id = 'TMALLORY'`.execute(h.db.db);
    expect(Number(stored.rows[0]!.n)).toBe(0);
  });

  it('runs a loop in each workspace at once, every Web API call with its own workspace\'s token', async () => {
    threads.TALPHA = await mentionIn(h, ALPHA);
    threads.TBETA = await mentionIn(h, BETA);
    // The Home tab of each workspace, published by the worker.
    await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, { type: 'app_home_opened', user: OWNER, channel: 'D1', tab: 'home', event_ts: '1.1' }, { teamId: BETA.teamId });
    await Promise.all([h.waitForPosts(threads.TALPHA, 1, 60_000, CHANNEL_OF.TALPHA), h.waitForPosts(threads.TBETA, 1, 60_000, CHANNEL_OF.TBETA)]);
    await h.slack.waitFor((c) => c.method === 'views.publish' && c.teamId === BETA.teamId, 30_000);
    const calls = writes(h.slack.calls);
    expect(calls.length).toBeGreaterThan(4);
    for (const call of calls) {
      expect(call.token, `${call.method} to ${call.teamId}`).toBe(tokens[call.teamId!]);
      expect(call.status).toBe(200);
      expect((call.response as { ok?: boolean }).ok, `${call.method}: ${JSON.stringify(call.response)}`).toBe(true);
    }
    const posts = calls.filter((c) => c.method === 'chat.postMessage');
    for (const post of posts) expect(post.args.channel).toBe(CHANNEL_OF[post.teamId!]);
    expect(new Set(posts.map((p) => p.teamId))).toEqual(new Set(['TALPHA', 'TBETA']));
  }, 120_000);

  it('goes quiet in a workspace that uninstalls mid-loop, while the other one finishes', async () => {
    const logMark = (await h.logs()).length;
    // Taken in the same tick as the revocation: every call recorded after it reached Slack after the uninstall.
    const mark = h.slack.calls.length;
    h.slack.oauth.uninstall(ALPHA.teamId);
    const uninstalledAt = Date.now();
    const secret = h.env.SLACK_SIGNING_SECRET!;
    expect((await sendEvent(`${h.url()}/slack/events`, secret, appUninstalled(), { teamId: ALPHA.teamId })).status).toBe(200);
    expect((await sendEvent(`${h.url()}/slack/events`, secret, tokensRevoked({ bot: ['UBOT'] }), { teamId: ALPHA.teamId })).status).toBe(200);
    const installed = await sql<{ team_id: string }>`select team_id from slack_installations`.execute(h.db.db);
    expect(installed.rows.map((r) => r.team_id)).toEqual(['TBETA']);

    // Beta's loop runs to its verdict; Alpha's run finishes meanwhile and its event is stored, not acted on.
    await waitUntil(() => h.posts(threads.TBETA!, CHANNEL_OF.TBETA).find(isVerdict), 120_000, 'the verdict in Beta');
    await waitUntil(
      async () => (await h.db.db.selectFrom('triggers').select('id').where('team_id', '=', 'TALPHA').where('kind', '=', 'platform_event').executeTakeFirst()) ?? undefined,
      60_000,
      "Alpha's platform event",
    );
    await waitUntil(async () => ((await h.logs()).slice(logMark).includes('the workspace has no installation') ? true : undefined), 30_000, 'the parked turn');
    await sleep(1500);

    const after = writes(h.slack.calls.slice(mark));
    const alphaCalls = after.filter((c) => c.token?.startsWith('xoxb-TALPHA') || c.teamId === 'TALPHA');
    // Slack revokes the tokens before it sends the event: a write already under way (a plan update,
    // a status) may still try, and is refused. Nothing is taken, and nothing tries again (no storm).
    expect(alphaCalls.length, alphaCalls.map((c) => c.method).join(', ')).toBeLessThanOrEqual(3);
    expect(alphaCalls.filter((c) => (c.response as { ok?: boolean }).ok === true).map((c) => `${c.method} ${c.at - uninstalledAt} ms after`)).toEqual([]);
    expect(h.posts(threads.TALPHA!, CHANNEL_OF.TALPHA)).toHaveLength(1);
    const quiet = (await h.logs()).slice(logMark);
    expect(linesAtLeast(quiet, 50)).toEqual([]);
    // No storm of warnings either: at most one line per thing that was in flight.
    expect(linesAtLeast(quiet, 40).length, linesAtLeast(quiet, 40).join('\n')).toBeLessThanOrEqual(3);
    // Alpha's data stays: the chat, its trigger (still queued), its Activity.
    const parked = await h.db.db.selectFrom('triggers').select(['status']).where('team_id', '=', 'TALPHA').where('kind', '=', 'platform_event').execute();
    expect(parked.map((t) => t.status)).toEqual(['queued']);
    expect(await h.db.db.selectFrom('chats').select('id').where('team_id', '=', 'TALPHA').execute()).toHaveLength(1);
    // Every Beta call still with Beta's token.
    for (const call of after.filter((c) => c.teamId === 'TBETA')) expect(call.token).toBe(tokens.TBETA);
  }, 240_000);

  it('picks the loop up where it was after a reinstall, with the new token', async () => {
    const mark = h.slack.calls.length;
    const fresh = await install(h, ALPHA);
    expect(fresh).not.toBe(tokens.TALPHA);
    await waitUntil(() => h.posts(threads.TALPHA!, CHANNEL_OF.TALPHA).find(isVerdict), 120_000, 'the verdict in Alpha after the reinstall');
    const posts = h.posts(threads.TALPHA!, CHANNEL_OF.TALPHA);
    // Launch report, training report, trained-run report, comparison: the same loop, one of each.
    expect(posts).toHaveLength(4);
    expect(posts[1]!.text).toMatch(/Launched LoRA training/);
    for (const call of writes(h.slack.calls.slice(mark)).filter((c) => c.teamId === 'TALPHA')) expect(call.token).toBe(fresh);
  }, 150_000);

  it('never writes a token or an OAuth secret to the logs or to the database in clear', async () => {
    const secrets = [...h.slack.oauth.secrets(), CLIENT_SECRET, STATE_SECRET, TOKEN_KEY];
    expect(secrets.length).toBeGreaterThanOrEqual(6);
    const logs = await h.logs();
    expect(logs.length).toBeGreaterThan(1000);
    for (const secret of secrets) expect(logs.includes(secret), `a secret in the logs: ${secret.slice(0, 12)}…`).toBe(false);
    const tables = await sql<{ schema: string; name: string }>`
      select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`.execute(h.db.db);
    expect(tables.rows.length).toBeGreaterThan(10);
    for (const table of tables.rows) {
      const found = await sql<{ n: string }>`select count(*) as n from ${sql.table(`${table.schema}.${table.name}`)} t where ${sql.raw('t::text')} like any(${secrets.map((s) => `%${s}%`)})`.execute(h.db.db);
      expect(Number(found.rows[0]!.n), `${table.schema}.${table.name}`).toBe(0);
    }
  });
});

describe('OAuth mode: token rotation', () => {
  it('refreshes a bot token close to its expiry and writes with the new one', async () => {
    const h = await startHarness({
      script: loopScript(),
      env: oauthEnv(),
      // Slack refreshes within two hours of the expiry: this token is inside that window two seconds after it is issued.
      slackOptions: { rejectUnknownTokens: true, oauth: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenRotation: { expiresInSeconds: 7202 } } },
    });
    try {
      const first = await install(h, ALPHA);
      expect(first).toMatch(/^xoxe\.xoxb-/);
      await sleep(2500);
      const threadTs = await mentionIn(h, ALPHA);
      await h.waitForPosts(threadTs, 1, 60_000, CHANNEL_OF.TALPHA);
      const refreshes = h.slack.callsTo('oauth.v2.access').filter((c) => c.args.grant_type === 'refresh_token');
      expect(refreshes.length).toBeGreaterThanOrEqual(1);
      const posted = h.slack.callsTo('chat.postMessage').filter((c) => c.teamId === 'TALPHA');
      expect(posted.length).toBeGreaterThan(0);
      const issued = h.slack.oauth.tokensOf('TALPHA').map((t) => t.token);
      for (const call of posted) {
        expect(call.token).not.toBe(first);
        expect(issued).toContain(call.token);
      }
    } finally {
      await h.stop();
    }
  }, 120_000);
});

describe('OAuth mode in Socket Mode', () => {
  it('serves the install page and its callback on PORT while events come over the socket', async () => {
    const appToken = 'xapp-1-socket-app-token';
    const mini = await startMiniSlack({ botToken: 'xoxb-unused', appToken });
    const h = await startHarness({ script: loopScript(), env: { ...oauthEnv(), SLACK_APP_TOKEN: appToken, SLACK_API_URL: mini.apiUrl, SLACK_SIGNING_SECRET: '' } });
    try {
      const health = await waitUntil(
        async () => {
          const res = await fetch(`${h.url()}/healthz`);
          const body = (await res.json()) as { status: string; slackSocket?: string };
          return res.status === 200 ? body : undefined;
        },
        30_000,
        'the socket to connect',
      );
      expect(health).toEqual({ status: 'ok', slackSocket: 'connected' });
      const { authorizeUrl } = await openInstallPage(h);
      expect(authorizeUrl.startsWith(new URL('../oauth/v2/authorize', mini.apiUrl).toString())).toBe(true);
      expect(new URL(authorizeUrl).searchParams.get('client_id')).toBe(CLIENT_ID);
      // A callback without the browser's state cookie is refused here too.
      const refused = await fetch(`${h.url()}/slack/oauth_redirect?code=c&state=s`);
      expect(refused.status).toBe(400);
      // Events come over the socket: no /slack/events route in Socket Mode.
      expect((await fetch(`${h.url()}/slack/events`, { method: 'POST', body: '{}' })).status).toBe(404);
    } finally {
      await h.stop();
      await mini.close();
    }
  }, 120_000);
});

describe('single-workspace mode (SLACK_BOT_TOKEN)', () => {
  it('serves no install page, and an uninstall only says the token no longer works', async () => {
    const h = await startHarness({ script: loopScript() });
    try {
      expect((await fetch(`${h.url()}/slack/install`)).status).toBe(404);
      const sent = await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, appUninstalled(), { teamId: 'T0FAKE' });
      expect(sent.status).toBe(200);
      await waitUntil(async () => ((await h.logs()).includes('SLACK_BOT_TOKEN no longer works in this workspace') ? true : undefined), 10_000, 'the warning');
      expect(linesAtLeast(await h.logs(), 50)).toEqual([]);
    } finally {
      await h.stop();
    }
  }, 120_000);
});
