// The payload check at the receivers' boundary: Slack's real shapes pass, malformed ones are named in
// one line; in Socket Mode a malformed payload is acked and never reaches Bolt or a listener.
import { App, type Receiver, type ReceiverEvent } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { CheckedReceiver, slackBodyProblem, slackPayloadProblem } from '../../src/slack/inbound-payloads.js';
import { agentSessionStopped, appHomeOpened, appMention, blockActionPayload, botMessage, eventEnvelope, threadMessage, userMessage } from '../kit/fakes/slack/index.js';
import { captureLogs } from '../kit/log-capture.js';

const CHANNEL = 'C0CHAN';

/** A view_submission as Slack sends it for a modal's submit. */
function viewSubmission(): Record<string, unknown> {
  return {
    type: 'view_submission',
    team: { id: 'T0FAKE', domain: 'fake' },
    user: { id: 'U1', username: 'u1', name: 'u1', team_id: 'T0FAKE' },
    api_app_id: 'A0FAKEAPP',
    token: 'fake-verification-token',
    trigger_id: '1.2.3',
    view: { id: 'V1', team_id: 'T0FAKE', type: 'modal', callback_id: 'approve', private_metadata: '', state: { values: {} }, hash: 'h', blocks: [] },
    response_urls: [],
    is_enterprise_install: false,
    enterprise: null,
  };
}

const wellFormed: Array<[string, unknown]> = [
  ['app_mention', eventEnvelope(appMention({ user: 'U1', text: '<@UBOT> hi', channel: CHANNEL }))],
  ['thread reply', eventEnvelope(threadMessage({ user: 'U1', text: 'more', channel: CHANNEL, threadTs: '1.000100' }))],
  ['channel message', eventEnvelope(userMessage({ user: 'U1', text: 'hello', channel: CHANNEL }))],
  ['bot message', eventEnvelope(botMessage({ text: 'from a bot', channel: CHANNEL }))],
  ['message_changed', eventEnvelope({ type: 'message', subtype: 'message_changed', hidden: true, channel: CHANNEL, ts: '2.000100', message: { type: 'message', text: 'edited', ts: '1.000100' }, event_ts: '2.000100' })],
  ['app_home_opened', eventEnvelope(appHomeOpened({ user: 'U1' }))],
  ['agent_session_stopped', eventEnvelope(agentSessionStopped({ channel: CHANNEL, threadTs: '1.000100', user: 'U1' }))],
  ['an event no listener handles', eventEnvelope({ type: 'reaction_added', user: 'U1', reaction: 'tada', item: { type: 'message', channel: CHANNEL, ts: '1.000100' }, event_ts: '3.000100' })],
  ['a button in a thread', blockActionPayload({ user: 'U1', channel: CHANNEL, actionId: 'next_step', value: 'v', threadTs: '1.000100' })],
  ['a button on the Home tab', blockActionPayload({ user: 'U1', actionId: 'home_scope', value: 'team', view: { id: 'V0HOME', type: 'home' } })],
  ['an org-wide install (team null)', { ...blockActionPayload({ user: 'U1', channel: CHANNEL, actionId: 'next_step' }), team: null }],
  ['view_submission', viewSubmission()],
  ['view_closed', { ...viewSubmission(), type: 'view_closed', is_cleared: false }],
  ['url_verification', { token: 't', challenge: 'abc', type: 'url_verification' }],
  ['app_rate_limited', { token: 't', type: 'app_rate_limited', team_id: 'T0FAKE', minute_rate_limited: 1518467820, api_app_id: 'A0FAKEAPP' }],
];

function without(body: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...body };
  delete copy[key];
  return copy;
}

const mention = eventEnvelope(appMention({ user: 'U1', text: '<@UBOT> hi', channel: CHANNEL }));
const click = blockActionPayload({ user: 'U1', channel: CHANNEL, actionId: 'next_step', value: 'v' });

const malformed: Array<[string, unknown, string]> = [
  ['a block_actions without a user', without(click, 'user'), 'block_actions payload: user: Invalid input: expected object, received undefined'],
  ['actions as a string', { ...click, actions: 'next_step' }, 'block_actions payload: actions: Invalid input: expected array, received string'],
  ['no action', { ...click, actions: [] }, 'block_actions payload: actions: Too small: expected array to have >=1 items'],
  ['an action without an id', { ...click, actions: [{ type: 'button' }] }, 'block_actions payload: actions.0.action_id: Invalid input: expected string, received undefined'],
  ['a button value of the wrong type', { ...click, actions: [{ type: 'button', action_id: 'next_step', value: 7 }] }, 'block_actions payload: actions.0.value: Invalid input: expected string, received number'],
  ['a user without an id', { ...click, user: { name: 'x' } }, 'block_actions payload: user.id: Invalid input: expected string, received undefined'],
  ['channel null', { ...click, channel: null }, 'block_actions payload: channel: Invalid input: expected object, received null'],
  ['"event": null', { ...mention, event: null }, 'event_callback payload: event: Invalid input: expected object, received null'],
  ['no event', without(mention, 'event'), 'event_callback payload: event: Invalid input: expected object, received undefined'],
  ['an event without a type', { ...mention, event: { text: 'x' } }, 'event_callback payload: event.type: Invalid input: expected string, received undefined'],
  ['an event user null', { ...mention, event: { ...(mention.event as object), user: null } }, 'event_callback payload: event.user: Invalid input: expected string or object'],
  ['a mention ts as a number', { ...mention, event: { ...(mention.event as object), ts: 17 } }, 'app_mention event: ts: Invalid input: expected string, received number'],
  ['a mention without text', { ...mention, event: without(mention.event as Record<string, unknown>, 'text') }, 'app_mention event: text: Invalid input: expected string, received undefined'],
  ['a reaction whose item is a string', eventEnvelope({ type: 'reaction_added', user: 'U1', item: 'x', event_ts: '1.1' }), 'event_callback payload: event.item: Invalid input: expected object, received string'],
  ['team_id null', { ...mention, team_id: null }, 'event_callback payload: team_id: Invalid input: expected string, received null'],
  ['authorizations of null', { ...mention, authorizations: [null] }, 'event_callback payload: authorizations.0: Invalid input: expected object, received null'],
  ['a view without a callback id', { ...viewSubmission(), view: { id: 'V1' } }, 'view_submission payload: view.callback_id: Invalid input: expected string, received undefined'],
  ['a view_submission with view null', { ...viewSubmission(), view: null }, 'view_submission payload: view: Invalid input: expected object, received null'],
  ['url_verification without a challenge', { type: 'url_verification' }, 'url_verification payload: challenge: Invalid input: expected string, received undefined'],
  ['no type', { event: {} }, 'the payload has no type'],
  ['a numeric type', { type: 5 }, 'the payload type is not a string'],
  ['a type the app never receives', { type: 'dialog_submission' }, 'unexpected payload type "dialog_submission"'],
  ['null', null, 'the body is not a JSON object'],
  ['an array', [click], 'the body is not a JSON object'],
];

describe('Slack payloads at the receiver boundary', () => {
  it.each(wellFormed)('passes %s', (_, body) => {
    expect(slackPayloadProblem(body)).toBeUndefined();
  });

  it.each(malformed)('names %s in one line', (_, body, problem) => {
    expect(slackPayloadProblem(body)).toBe(problem);
  });

  it("parses HTTP bodies as Bolt does: a form's payload, other forms as fields, else JSON", () => {
    const form = (fields: Record<string, string>) => Buffer.from(new URLSearchParams(fields).toString());
    const FORM = 'application/x-www-form-urlencoded';
    expect(slackBodyProblem(form({ payload: JSON.stringify(click) }), FORM)).toBeUndefined();
    expect(slackBodyProblem(form({ payload: JSON.stringify(without(click, 'user')) }), FORM)).toBe('block_actions payload: user: Invalid input: expected object, received undefined');
    expect(slackBodyProblem(Buffer.from('payload=a&payload=b'), FORM)).toBe('the form carries more than one payload field');
    expect(slackBodyProblem(form({ ssl_check: '1', token: 't' }), FORM)).toBeUndefined();
    expect(slackBodyProblem(form({ command: '/verdict', team_id: 'T1', user_id: 'U1', channel_id: 'C1', text: 'hi', trigger_id: '1' }), FORM)).toBeUndefined();
    expect(slackBodyProblem(form({ command: '/verdict', team_id: 'T1' }), FORM)).toBe('slash command: user_id: Invalid input: expected string, received undefined');
    expect(slackBodyProblem(form({ token: 't' }), FORM)).toBe('the payload has no type');
    expect(slackBodyProblem(Buffer.from(JSON.stringify(mention)), 'application/json')).toBeUndefined();
    expect(slackBodyProblem(Buffer.from('{not json'), 'application/json')).toBe('the body is not valid JSON');
  });
});

/** A receiver that hands bodies to the app as Socket Mode's does, recording whether each was acked. */
class DeliveringReceiver implements Receiver {
  private app: App | undefined;
  init(app: App): void {
    this.app = app;
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
  async deliver(body: unknown): Promise<{ acked: boolean }> {
    let acked = false;
    const event: ReceiverEvent = { body: body as ReceiverEvent['body'], ack: async () => void (acked = true) };
    await this.app!.processEvent(event);
    return { acked };
  }
}

function appOn(receiver: Receiver): { app: App; mentions: string[]; clicks: string[] } {
  const app = new App({ receiver, authorize: async () => ({ botToken: 'xoxb-test', botUserId: 'UBOT', botId: 'BBOT' }) });
  const mentions: string[] = [];
  const clicks: string[] = [];
  app.event('app_mention', async ({ event }) => void mentions.push(event.text));
  app.action('next_step', async ({ ack, body }) => {
    await ack();
    clicks.push(body.user.id);
  });
  return { app, mentions, clicks };
}

describe('Socket Mode payloads through the same check', () => {
  it('processes well-formed payloads; acks and drops a malformed one with one warning, where bare Bolt throws', async () => {
    const inner = new DeliveringReceiver();
    const { logger, lines } = captureLogs('warn');
    const { mentions, clicks } = appOn(new CheckedReceiver(inner, logger));

    expect(await inner.deliver(mention)).toEqual({ acked: true });
    expect(await inner.deliver(click)).toEqual({ acked: true });
    expect([mentions, clicks]).toEqual([['<@UBOT> hi'], ['U1']]);

    for (const body of [{ ...mention, event: null }, without(click, 'user'), { ...click, actions: 'next_step' }]) {
      expect(await inner.deliver(body)).toEqual({ acked: true });
    }
    expect([mentions, clicks]).toEqual([['<@UBOT> hi'], ['U1']]);
    expect(lines.map((l) => [l.msg, l.problem])).toEqual([
      ['malformed Slack payload refused', 'event_callback payload: event: Invalid input: expected object, received null'],
      ['malformed Slack payload refused', 'block_actions payload: user: Invalid input: expected object, received undefined'],
      ['malformed Slack payload refused', 'block_actions payload: actions: Invalid input: expected array, received string'],
    ]);

    // What the check spares the app: Bolt itself throws on these before any listener runs.
    const bare = new DeliveringReceiver();
    appOn(bare);
    await expect(bare.deliver({ ...mention, event: null })).rejects.toThrow(TypeError);
  });
});
