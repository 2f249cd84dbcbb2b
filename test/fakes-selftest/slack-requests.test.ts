// Proves the Slack request helpers are accepted by a real Bolt HTTP receiver wired to the fake Slack API.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { App, LogLevel, type BlockFeedbackButtonsAction } from '@slack/bolt';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { appHomeOpened, appMention, botMessage, type FakeSlack, sendBlockAction, sendEvent, sendUrlVerification, startFakeSlack, threadMessage } from '../kit/fakes/slack/index.js';

const SECRET = 'test-signing-secret';

describe('signed Slack requests to a Bolt HTTP receiver', () => {
  let slack: FakeSlack;
  let app: App;
  let url: string;
  const seen: { kind: string; payload: Record<string, unknown>; retryNum?: number }[] = [];

  beforeAll(async () => {
    slack = await startFakeSlack();
    app = new App({
      token: 'xoxb-test',
      signingSecret: SECRET,
      processBeforeResponse: true,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: slack.apiUrl },
    });
    app.event('app_mention', async ({ event, context, client }) => {
      seen.push({ kind: 'app_mention', payload: event as never, ...(context.retryNum !== undefined ? { retryNum: context.retryNum } : {}) });
      await client.chat.postMessage({ channel: event.channel, thread_ts: event.ts, text: 'on it' });
    });
    app.event('message', async ({ event }) => {
      seen.push({ kind: 'message', payload: event as never });
    });
    app.event('app_home_opened', async ({ event }) => {
      seen.push({ kind: 'app_home_opened', payload: event as never });
    });
    app.action('approve', async ({ ack, body, action }) => {
      await ack();
      seen.push({ kind: 'action', payload: { body, action } as never });
    });
    app.action<BlockFeedbackButtonsAction>('rate', async ({ ack, body, action }) => {
      await ack();
      seen.push({ kind: 'feedback', payload: { body, action } as never });
    });
    const server = (await app.start({ port: 0, host: '127.0.0.1' })) as Server;
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  });
  beforeEach(() => {
    seen.length = 0;
  });
  afterAll(async () => {
    await app.stop();
    await slack.stop();
  });

  it('delivers an app_mention that the bot answers through the fake Slack API', async () => {
    const event = appMention({ user: 'U1', text: '<@UBOT> run the benchmark', channel: 'C1' });
    const delivery = await sendEvent(url, SECRET, event);
    expect(delivery.status).toBe(200);
    expect(seen).toEqual([{ kind: 'app_mention', payload: expect.objectContaining({ text: '<@UBOT> run the benchmark', user: 'U1' }) }]);
    expect(slack.messages('C1', String(event.ts))).toEqual([expect.objectContaining({ text: 'on it' })]);
    expect(slack.callsTo('auth.test').length).toBeGreaterThan(0);
  });

  it('passes Slack retry headers through to the context', async () => {
    const event = appMention({ user: 'U1', text: '<@UBOT> again', channel: 'C1' });
    const first = await sendEvent(url, SECRET, event);
    const retry = await sendEvent(url, SECRET, event, { eventId: first.eventId, retryNum: 1, retryReason: 'http_timeout' });
    expect(retry.status).toBe(200);
    expect(seen.map((s) => s.retryNum)).toEqual([undefined, 1]);
  });

  it('rejects bad, stale and missing signatures with 401', async () => {
    const event = appMention({ user: 'U1', text: '<@UBOT> hi', channel: 'C1' });
    expect((await sendEvent(url, SECRET, event, { signature: 'v0=deadbeef' })).status).toBe(401);
    expect((await sendEvent(url, 'wrong-secret', event)).status).toBe(401);
    expect((await sendEvent(url, SECRET, event, { timestamp: Math.floor(Date.now() / 1000) - 600 })).status).toBe(401);
    expect((await sendEvent(url, SECRET, event, { unsigned: true })).status).toBe(401);
    expect(seen).toEqual([]);
  });

  it('answers the url_verification challenge', async () => {
    const delivery = await sendUrlVerification(url, SECRET, 'challenge-123');
    expect(delivery.status).toBe(200);
    expect(JSON.parse(delivery.body)).toEqual({ challenge: 'challenge-123' });
  });

  it('delivers thread replies and other bots’ messages, while Bolt drops the bot’s own echo', async () => {
    await sendEvent(url, SECRET, threadMessage({ user: 'U1', text: 'more detail', channel: 'C1', threadTs: '1733150000.000100' }));
    await sendEvent(url, SECRET, botMessage({ text: 'my own post', channel: 'C1', botId: 'BBOT' }));
    await sendEvent(url, SECRET, botMessage({ text: 'another bot', channel: 'C1' }));
    expect(seen.map((s) => s.payload.text)).toEqual(['more detail', 'another bot']);
    expect(seen[0]?.payload).toMatchObject({ thread_ts: '1733150000.000100', channel_type: 'channel' });
  });

  it('delivers app_home_opened', async () => {
    await sendEvent(url, SECRET, appHomeOpened({ user: 'U2' }));
    expect(seen).toEqual([{ kind: 'app_home_opened', payload: expect.objectContaining({ user: 'U2', channel: 'DU2', tab: 'home' }) }]);
  });

  it('delivers a form-encoded block_actions payload to the action listener', async () => {
    const delivery = await sendBlockAction(url, SECRET, {
      user: 'U1',
      channel: 'C1',
      messageTs: '1733150000.000200',
      threadTs: '1733150000.000100',
      actionId: 'approve',
      value: 'run-42',
    });
    expect(delivery.status).toBe(200);
    const payload = seen[0]?.payload as { body: Record<string, unknown>; action: Record<string, unknown> };
    expect(payload.action).toMatchObject({ action_id: 'approve', value: 'run-42', type: 'button' });
    expect(payload.body).toMatchObject({
      type: 'block_actions',
      user: { id: 'U1', team_id: 'T0FAKE' },
      container: { type: 'message', message_ts: '1733150000.000200', channel_id: 'C1', thread_ts: '1733150000.000100' },
      channel: { id: 'C1' },
      message: { ts: '1733150000.000200', thread_ts: '1733150000.000100' },
    });
  });

  it('delivers a click on a feedback_buttons element as Bolt types it: the element\'s action id, the clicked button\'s value', async () => {
    const delivery = await sendBlockAction(url, SECRET, {
      user: 'U2',
      channel: 'C1',
      messageTs: '1733150000.000300',
      actionId: 'rate',
      value: 'negative',
      actionText: '👎',
      elementType: 'feedback_buttons',
    });
    expect(delivery.status).toBe(200);
    const payload = seen[0]?.payload as { body: Record<string, unknown>; action: Record<string, unknown> };
    expect(seen[0]?.kind).toBe('feedback');
    expect(payload.action).toMatchObject({ type: 'feedback_buttons', action_id: 'rate', value: 'negative', text: { type: 'plain_text', text: '👎' } });
    expect(payload.body).toMatchObject({ type: 'block_actions', container: { type: 'message', message_ts: '1733150000.000300', channel_id: 'C1' } });
  });
});
