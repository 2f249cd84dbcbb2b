// Proves the fake Slack API speaks the real Web API protocol, using the real @slack/web-api WebClient against it.
import { WebClient } from '@slack/web-api';
import { silentWebApiLogger as silent } from '../kit/fakes/slack/web-client.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';


const section = (text: string) => ({ type: 'section', text: { type: 'mrkdwn', text } });

describe('fake Slack Web API', () => {
  let slack: FakeSlack;
  let client: WebClient;

  beforeAll(async () => {
    slack = await startFakeSlack({ teams: { 'xoxb-other': { teamId: 'T0OTHER', botUserId: 'UOTHERBOT', botId: 'BOTHERBOT' } } });
    client = new WebClient('xoxb-test', {
      slackApiUrl: slack.apiUrl,
      logger: silent,
      retryConfig: { retries: 2, minTimeout: 10, maxTimeout: 20 },
    });
  });
  beforeEach(() => slack.reset());
  afterAll(() => slack.stop());

  it('answers auth.test for the default workspace and for a token of another workspace', async () => {
    const own = await client.auth.test();
    expect(own).toMatchObject({ ok: true, team_id: 'T0FAKE', user_id: 'UBOT', bot_id: 'BBOT', is_enterprise_install: false });
    const other = await client.auth.test({ token: 'xoxb-other' });
    expect(other).toMatchObject({ ok: true, team_id: 'T0OTHER', user_id: 'UOTHERBOT', bot_id: 'BOTHERBOT' });
    expect(slack.callsTo('auth.test').map((c) => c.token)).toEqual(['xoxb-test', 'xoxb-other']);
  });

  it('posts and updates messages, parsing form-encoded blocks back into values', async () => {
    const posted = await client.chat.postMessage({ channel: 'C1', thread_ts: '1733150000.000100', text: 'first', blocks: [section('*hello*')] });
    expect(posted.ok).toBe(true);
    expect(posted.ts).toMatch(/^\d{10}\.\d{6}$/);
    expect(posted.message).toMatchObject({ user: 'UBOT', bot_id: 'BBOT', thread_ts: '1733150000.000100' });
    const second = await client.chat.postMessage({ channel: 'C1', thread_ts: '1733150000.000100', text: 'second' });
    expect(Number(second.ts)).toBeGreaterThan(Number(posted.ts));

    const call = slack.callsTo('chat.postMessage')[0];
    expect(call?.args.blocks).toEqual([section('*hello*')]);
    expect(call?.status).toBe(200);

    await client.chat.update({ channel: 'C1', ts: String(posted.ts), text: 'edited', blocks: [section('changed')] });
    const messages = slack.messages('C1', '1733150000.000100');
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatchObject({ text: 'edited', blocks: [section('changed')], updates: 1 });
    expect(messages[1]).toMatchObject({ text: 'second', updates: 0 });

    await expect(client.chat.update({ channel: 'C1', ts: '1.000001', text: 'x' })).rejects.toMatchObject({
      data: { error: 'message_not_found' },
    });
  });

  it('builds permalinks with the thread of a reply', async () => {
    const reply = await client.chat.postMessage({ channel: 'C2', thread_ts: '1733150000.000100', text: 'reply' });
    const link = await client.chat.getPermalink({ channel: 'C2', message_ts: String(reply.ts) });
    expect(link.permalink).toBe(
      `https://fake.slack.test/archives/C2/p${String(reply.ts).replace('.', '')}?thread_ts=1733150000.000100&cid=C2`,
    );
  });

  it('answers 429 with Retry-After, which the WebClient waits out and retries by itself', async () => {
    slack.failNext('chat.postMessage', 1, { status: 429, retryAfter: 1 });
    const result = await client.chat.postMessage({ channel: 'C3', text: 'after the limit' });
    expect(result.ok).toBe(true);
    const calls = slack.callsTo('chat.postMessage');
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
    expect(calls[0]?.response).toEqual({ ok: false, error: 'ratelimited' });
    expect((calls[1]?.at ?? 0) - (calls[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
    expect(slack.messages('C3')).toHaveLength(1);
  });

  it('refuses 51 blocks with invalid_blocks and records the violation', async () => {
    const blocks = Array.from({ length: 51 }, (_, i) => section(`block ${i}`));
    await expect(client.chat.postMessage({ channel: 'C4', text: 'too many', blocks })).rejects.toMatchObject({
      code: 'slack_webapi_platform_error',
      data: { ok: false, error: 'invalid_blocks' },
    });
    expect(slack.violations).toEqual([expect.stringContaining('no more than 50 blocks')]);
    expect(slack.messages('C4')).toHaveLength(0);
  });

  it('checks section, header, button and table limits', async () => {
    const blocks = [
      section('x'.repeat(3001)),
      { type: 'header', text: { type: 'plain_text', text: 'h'.repeat(151) } },
      { type: 'actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'Go' }, action_id: 'a'.repeat(256), value: 'v'.repeat(2001) }] },
      { type: 'table', rows: Array.from({ length: 101 }, (_, i) => [{ type: 'raw_text', text: i === 0 ? '' : 'cell' }]) },
    ];
    await expect(client.chat.postMessage({ channel: 'C5', text: 'bad', blocks } as never)).rejects.toMatchObject({
      data: { error: 'invalid_blocks' },
    });
    const joined = slack.violations.join('\n');
    for (const fragment of ['section text', 'header text', 'action_id', 'button value', '100 rows', 'raw_text cell text must be at least 1 character']) {
      expect(joined).toContain(fragment);
    }
  });

  it('refuses a Home view over 100 blocks', async () => {
    const view = { type: 'home' as const, blocks: Array.from({ length: 101 }, () => ({ type: 'divider' as const })) };
    await expect(client.views.publish({ user_id: 'U1', view })).rejects.toMatchObject({ data: { error: 'invalid_arguments' } });
    expect(slack.violations[0]).toContain('no more than 100 blocks');
    await client.views.publish({ user_id: 'U1', view: { type: 'home', blocks: [section('home')] } });
    expect(slack.homeViews.get('U1')?.blocks).toEqual([section('home')]);
  });

  it('records a burst of posts to one channel as a rate violation, and enforces it when asked', async () => {
    for (let i = 0; i < 4; i += 1) await client.chat.postMessage({ channel: 'C6', text: `burst ${i}` });
    expect(slack.violations).toEqual([expect.stringContaining('more than 3 posts to C6')]);

    const strict = await startFakeSlack({ enforceRateLimit: true });
    const writer = new WebClient('xoxb-test', { slackApiUrl: strict.apiUrl, logger: silent, rejectRateLimitedCalls: true, retryConfig: { retries: 0 } });
    try {
      for (let i = 0; i < 3; i += 1) await writer.chat.postMessage({ channel: 'C6', text: `ok ${i}` });
      await expect(writer.chat.postMessage({ channel: 'C6', text: 'too fast' })).rejects.toMatchObject({
        code: 'slack_webapi_rate_limited_error',
        retryAfter: 1,
      });
    } finally {
      await strict.stop();
    }
  });

  it('finds posted messages by metadata through paginated conversations.replies', async () => {
    slack.seedMessage({ channel: 'C7', user: 'U1', text: 'the question', ts: '1733150000.000100' });
    for (const key of ['a', 'b', 'c']) {
      await client.chat.postMessage({
        channel: 'C7',
        thread_ts: '1733150000.000100',
        text: key,
        metadata: { event_type: 'verdict_bot_post', event_payload: { post_key: key } },
      });
    }
    const first = await client.conversations.replies({ channel: 'C7', ts: '1733150000.000100', limit: 2, include_all_metadata: true });
    expect(first.messages?.map((m) => m.text)).toEqual(['the question', 'a']);
    expect(first.has_more).toBe(true);
    const next = await client.conversations.replies({
      channel: 'C7',
      ts: '1733150000.000100',
      limit: 2,
      include_all_metadata: true,
      cursor: String(first.response_metadata?.next_cursor),
    });
    expect(next.messages?.map((m) => (m as { metadata?: { event_payload?: { post_key?: string } } }).metadata?.event_payload?.post_key)).toEqual(['b', 'c']);
    expect(next.response_metadata?.next_cursor).toBe('');
    const withoutMetadata = await client.conversations.replies({ channel: 'C7', ts: '1733150000.000100' });
    expect(withoutMetadata.messages?.some((m) => 'metadata' in m)).toBe(false);
    expect(slack.messages('C7')).toHaveLength(3);
  });

  it('stores uploads made with the WebClient files.uploadV2 flow', async () => {
    await client.filesUploadV2({ channel_id: 'C8', thread_ts: '1733150000.000100', initial_comment: 'the report', filename: 'report.csv', content: 'a,b\n1,2\n' });
    expect(slack.calls.map((c) => c.method)).toEqual(['files.getUploadURLExternal', 'upload', 'files.completeUploadExternal']);
    const [file] = [...slack.files.values()];
    expect(file).toMatchObject({ filename: 'report.csv', completed: true, channelId: 'C8', initialComment: 'the report' });
    expect(file?.content.toString()).toBe('a,b\n1,2\n');
    expect(slack.violations).toEqual([]);
  });

  it('accepts JSON bodies, records unknown methods and resolves waitFor on a later call', async () => {
    const waiting = slack.waitFor((c) => c.method === 'chat.postEphemeral', 2000);
    const response = await fetch(`${slack.apiUrl}chat.postMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', authorization: 'Bearer xoxb-json' },
      body: JSON.stringify({ channel: 'C9', text: 'json', blocks: [section('json')] }),
    });
    expect(await response.json()).toMatchObject({ ok: true, channel: 'C9' });
    await expect(client.apiCall('nope.nothing')).rejects.toMatchObject({ data: { error: 'unknown_method' } });
    await client.chat.postEphemeral({ channel: 'C9', user: 'U1', text: 'only you' });
    expect((await waiting).args).toMatchObject({ user: 'U1', text: 'only you' });
    expect(slack.ephemerals).toEqual([expect.objectContaining({ channel: 'C9', user: 'U1', text: 'only you' })]);
    expect(slack.callsTo('chat.postMessage')[0]).toMatchObject({ token: 'xoxb-json', args: { blocks: [section('json')] } });
    expect(slack.callsTo('nope.nothing')).toHaveLength(1);
  });
});
