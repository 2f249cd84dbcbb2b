// Per-workspace writes: the poster and the Home publisher with each workspace's token, and what they
// do for a workspace without an installation or with a token Slack no longer takes.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createHomePublisher } from '../../src/slack/home.js';
import { createSlackClients, SlackPoster } from '../../src/slack/poster.js';
import { isDeadTokenError, WorkspaceUnavailable, type SlackClients, type WorkspaceClients } from '../../src/slack/workspace-clients.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createPost, getPost } from '../../src/store/posts.js';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';

const logger = pino({ level: 'silent' });
let handle: DbHandle;
let slack: FakeSlack;
let thread = 0;
const TOKENS: Record<string, string> = { TONE: 'xoxb-one-token', TTWO: 'xoxb-two-token', TREVOKED: 'xoxb-revoked-token' };

beforeAll(async () => {
  handle = createDb(await createTestDatabase('workspace_clients'), { max: 4 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, logger);
  slack = await startFakeSlack({ rejectUnknownTokens: true, teams: { [TOKENS.TONE!]: { teamId: 'TONE' }, [TOKENS.TTWO!]: { teamId: 'TTWO' } } });
});
afterAll(async () => {
  await handle.close();
  await slack.stop();
});

/** A source like OAuth mode's: each listed team's token, none for the others. */
function workspaces(teams: readonly string[]): WorkspaceClients {
  const clients = new Map<string, SlackClients>(teams.map((t) => [t, createSlackClients(TOKENS[t]!, slack.apiUrl, logger)]));
  return { perWorkspace: true, forTeam: async (teamId) => clients.get(teamId) };
}

async function pendingPost(teamId: string) {
  thread += 1;
  const chat = await handle.db
    .insertInto('chats')
    .values({ team_id: teamId, channel_id: `C${teamId}`, thread_ts: `1733150000.${String(thread).padStart(6, '0')}`, owner_user_id: 'UOWNER' })
    .returningAll()
    .executeTakeFirstOrThrow();
  const post = await createPost(handle.db, { teamId, chatId: chat.id, turnId: null, postKey: `k${thread}`, channelId: chat.channel_id, threadTs: chat.thread_ts, reply: { to: 'UOWNER', text: `hello ${teamId}`, parts: [] } });
  return { chat, post };
}

describe('the poster with per-workspace clients', () => {
  it("posts each workspace's messages with that workspace's token", async () => {
    const poster = new SlackPoster(handle.db, workspaces(['TONE', 'TTWO']), logger);
    const one = await pendingPost('TONE');
    const two = await pendingPost('TTWO');
    const mark = slack.calls.length;
    await poster.deliverPending('TONE', one.chat.id);
    await poster.deliverPending('TTWO', two.chat.id);
    const calls = slack.calls.slice(mark);
    expect(calls.filter((c) => c.method === 'chat.postMessage').map((c) => [c.teamId, c.token])).toEqual([
      ['TONE', TOKENS.TONE],
      ['TTWO', TOKENS.TTWO],
    ]);
    for (const call of calls) expect(call.token).toBe(TOKENS[call.teamId!]);
    expect((await getPost(handle.db, 'TONE', one.post.id))?.status).toBe('posted');
  });

  it('leaves the posts of a workspace without an installation pending, calling nothing', async () => {
    const poster = new SlackPoster(handle.db, workspaces(['TONE']), logger);
    const { chat, post } = await pendingPost('TGONE');
    const mark = slack.calls.length;
    await expect(poster.deliverPending('TGONE', chat.id)).rejects.toBeInstanceOf(WorkspaceUnavailable);
    expect(slack.calls.length).toBe(mark);
    expect((await getPost(handle.db, 'TGONE', post.id))?.status).toBe('pending');
    await poster.postEphemeral('C1', 'U1', 'only you', undefined, 'TGONE');
    expect(slack.calls.length).toBe(mark);
  });

  it('keeps a post pending when Slack refuses the token in OAuth mode, and marks it failed with one bot token as before', async () => {
    const { chat, post } = await pendingPost('TREVOKED');
    const oauth = new SlackPoster(handle.db, workspaces(['TREVOKED']), logger);
    await expect(oauth.deliverPending('TREVOKED', chat.id)).rejects.toBeInstanceOf(WorkspaceUnavailable);
    expect((await getPost(handle.db, 'TREVOKED', post.id))?.status).toBe('pending');
    const fresh = await pendingPost('TREVOKED');
    const single = new SlackPoster(handle.db, createSlackClients(TOKENS.TREVOKED!, slack.apiUrl, logger), logger);
    await single.deliverPending('TREVOKED', fresh.chat.id);
    const failed = await getPost(handle.db, 'TREVOKED', fresh.post.id);
    expect([failed?.status, failed?.error]).toEqual(['failed', 'invalid_auth']);
  });
});

describe('the Home publisher with per-workspace clients', () => {
  it("publishes with the viewer's workspace token, and reports a workspace without an installation", async () => {
    const home = createHomePublisher({ db: handle.db, clients: workspaces(['TONE', 'TTWO']), logger });
    await home.publish('TTWO', 'UVIEWER', {});
    const publish = slack.callsTo('views.publish').at(-1)!;
    expect([publish.teamId, publish.token]).toEqual(['TTWO', TOKENS.TTWO]);
    await expect(home.publish('TGONE', 'UVIEWER', {})).rejects.toBeInstanceOf(WorkspaceUnavailable);
  });
});

describe('isDeadTokenError', () => {
  it("tells Slack's answers to a revoked token from other failures", () => {
    const platform = (error: string) => ({ code: 'slack_webapi_platform_error', data: { error } });
    for (const error of ['invalid_auth', 'token_revoked', 'account_inactive', 'token_expired']) expect(isDeadTokenError(platform(error))).toBe(true);
    for (const error of ['channel_not_found', 'invalid_blocks', 'ratelimited']) expect(isDeadTokenError(platform(error))).toBe(false);
    expect(isDeadTokenError({ code: 'slack_webapi_request_error' })).toBe(false);
    expect(isDeadTokenError(undefined)).toBe(false);
  });
});
