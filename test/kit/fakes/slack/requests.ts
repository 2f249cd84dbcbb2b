// Sends signed requests to the bot's Bolt HTTP receiver exactly as Slack does: events, block actions, URL checks.
import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { signSlackRequest, SLACK_USER_AGENT } from '../../signing.js';

/** The bot's answer to one request. */
export interface SlackDelivery {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  /** Time from sending to the full answer; Slack gives up (and retries events) after 3 s. */
  elapsedMs: number;
}

export interface SigningOptions {
  /** Seconds since the epoch for `X-Slack-Request-Timestamp`; now by default. */
  timestamp?: number;
  /** Sent instead of the computed `X-Slack-Signature`, to exercise signature checks. */
  signature?: string;
  /** Send neither signature header. */
  unsigned?: boolean;
  /** Extra headers, e.g. Slack's retry headers. */
  headers?: Record<string, string>;
}

export interface SendEventOptions extends SigningOptions {
  teamId?: string;
  eventId?: string;
  /** Sets `X-Slack-Retry-Num` (Slack counts retries from 1). */
  retryNum?: number;
  /** `X-Slack-Retry-Reason`; `http_timeout` when `retryNum` is set and this is not. */
  retryReason?: string;
  apiAppId?: string;
  botUserId?: string;
  eventTime?: number;
  /** The workspace's Enterprise Grid organization. */
  enterpriseId?: string;
  /** The app is installed org-wide (the event's authorization says so). */
  isEnterpriseInstall?: boolean;
}

export type SlackEvent = Record<string, unknown> & { type: string };

let lastTsMicros = 0;

/** A fresh, strictly increasing Slack message timestamp such as `1733150000.000100`. */
export function slackTs(): string {
  lastTsMicros = Math.max(Date.now() * 1000, lastTsMicros + 1);
  return `${Math.floor(lastTsMicros / 1e6)}.${String(lastTsMicros % 1e6).padStart(6, '0')}`;
}

/** Posts a raw body to the receiver with Slack's headers and signature. */
export function postToBolt(
  url: string,
  secret: string,
  body: string,
  contentType: 'application/json' | 'application/x-www-form-urlencoded',
  opts: SigningOptions = {},
): Promise<SlackDelivery> {
  const timestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    'Content-Type': contentType,
    'Content-Length': String(Buffer.byteLength(body)),
    'User-Agent': SLACK_USER_AGENT,
    Accept: '*/*',
    ...opts.headers,
  };
  if (!opts.unsigned) {
    headers['X-Slack-Request-Timestamp'] = String(timestamp);
    headers['X-Slack-Signature'] = opts.signature ?? signSlackRequest(secret, timestamp, body);
  }
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          headers: res.headers,
          elapsedMs: Date.now() - started,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The Events API `event_callback` envelope Slack wraps around `event`. */
export function eventEnvelope(event: SlackEvent, opts: Omit<SendEventOptions, keyof SigningOptions | 'retryNum' | 'retryReason'> = {}): Record<string, unknown> & { event_id: string } {
  const teamId = opts.teamId ?? (typeof event.team === 'string' ? event.team : 'T0FAKE');
  const eventId = opts.eventId ?? `Ev${randomBytes(5).toString('hex').toUpperCase()}`;
  return {
    token: 'fake-verification-token',
    team_id: teamId,
    ...(opts.enterpriseId ? { enterprise_id: opts.enterpriseId } : {}),
    context_team_id: teamId,
    context_enterprise_id: opts.enterpriseId ?? null,
    api_app_id: opts.apiAppId ?? 'A0FAKEAPP',
    event,
    type: 'event_callback',
    event_id: eventId,
    event_time: opts.eventTime ?? Math.floor(Date.now() / 1000),
    authorizations: [
      {
        enterprise_id: opts.enterpriseId ?? null,
        team_id: opts.isEnterpriseInstall ? null : teamId,
        user_id: opts.botUserId ?? 'UBOT',
        is_bot: true,
        is_enterprise_install: opts.isEnterpriseInstall === true,
      },
    ],
    is_ext_shared_channel: false,
    event_context: `4-fake-${eventId}`,
  };
}

/**
 * Delivers an Events API `event_callback` envelope around `event`, signed with `secret`.
 * Reuse `eventId` together with `retryNum` to imitate Slack redelivering the same event.
 */
export async function sendEvent(
  url: string,
  secret: string,
  event: SlackEvent,
  opts: SendEventOptions = {},
): Promise<SlackDelivery & { eventId: string }> {
  const envelope = eventEnvelope(event, opts);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.retryNum !== undefined) {
    headers['X-Slack-Retry-Num'] = String(opts.retryNum);
    headers['X-Slack-Retry-Reason'] = opts.retryReason ?? 'http_timeout';
  }
  const delivery = await postToBolt(url, secret, JSON.stringify(envelope), 'application/json', { ...opts, headers });
  return { ...delivery, eventId: envelope.event_id };
}

/** Sends the `url_verification` challenge Slack sends when the request URL is configured. */
export function sendUrlVerification(url: string, secret: string, challenge: string): Promise<SlackDelivery> {
  const body = JSON.stringify({ token: 'fake-verification-token', challenge, type: 'url_verification' });
  return postToBolt(url, secret, body, 'application/json');
}

function richTextBlocks(text: string): unknown[] {
  const elements: Record<string, unknown>[] = [];
  for (const [i, piece] of text.split(/<@([UW][A-Z0-9]+)(?:\|[^>]*)?>/).entries()) {
    if (i % 2 === 1) elements.push({ type: 'user', user_id: piece });
    else if (piece) elements.push({ type: 'text', text: piece });
  }
  return [{ type: 'rich_text', block_id: randomBytes(3).toString('hex'), elements: [{ type: 'rich_text_section', elements }] }];
}

const channelType = (channel: string): string =>
  channel.startsWith('D') ? 'im' : channel.startsWith('G') ? 'group' : 'channel';

export interface UserMessageInput {
  user: string;
  text: string;
  channel: string;
  ts?: string;
  threadTs?: string;
  team?: string;
  /** Author of the thread's parent, as Slack adds to replies. */
  parentUserId?: string;
  /** Files shared with the message (`FakeSlack.shareFile` entries); a `message` event then has subtype `file_share`. */
  files?: readonly object[];
}

/** An `app_mention` event as Slack sends it when a user writes `<@UBOT> …`. */
export function appMention(input: UserMessageInput): SlackEvent {
  const ts = input.ts ?? slackTs();
  return {
    type: 'app_mention',
    user: input.user,
    text: input.text,
    ts,
    client_msg_id: randomUUID(),
    team: input.team ?? 'T0FAKE',
    blocks: richTextBlocks(input.text),
    channel: input.channel,
    event_ts: ts,
    ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
    ...(input.threadTs && input.parentUserId ? { parent_user_id: input.parentUserId } : {}),
    ...(input.files?.length ? { files: input.files, upload: false, display_as_bot: false } : {}),
  };
}

/** A plain user `message` event (channel, DM or thread, depending on `channel` and `threadTs`). */
export function userMessage(input: UserMessageInput): SlackEvent {
  const ts = input.ts ?? slackTs();
  return {
    type: 'message',
    user: input.user,
    text: input.text,
    ts,
    client_msg_id: randomUUID(),
    team: input.team ?? 'T0FAKE',
    blocks: richTextBlocks(input.text),
    channel: input.channel,
    event_ts: ts,
    channel_type: channelType(input.channel),
    ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
    ...(input.threadTs && input.parentUserId ? { parent_user_id: input.parentUserId } : {}),
    ...(input.files?.length ? { subtype: 'file_share', files: input.files, upload: false, display_as_bot: false } : {}),
  };
}

/** A user's reply in a thread: a `message` event carrying `thread_ts`. */
export function threadMessage(input: UserMessageInput & { threadTs: string }): SlackEvent {
  return userMessage(input);
}

export interface BotMessageInput {
  text: string;
  channel: string;
  ts?: string;
  threadTs?: string;
  /** `B0OTHER` by default; pass the fake's bot id (`BBOT`) to imitate the bot's own echo. */
  botId?: string;
  /** The bot's user id, present on messages posted with a bot token. */
  user?: string;
  appId?: string;
  team?: string;
  /** `bot_message` by default; `null` omits the subtype as for modern app bots. */
  subtype?: string | null;
  blocks?: unknown[];
}

/** A `message` event posted by a bot (`bot_id`, and `subtype: 'bot_message'` unless disabled). */
export function botMessage(input: BotMessageInput): SlackEvent {
  const ts = input.ts ?? slackTs();
  const subtype = input.subtype === undefined ? 'bot_message' : input.subtype;
  return {
    type: 'message',
    ...(subtype ? { subtype } : {}),
    text: input.text,
    ts,
    bot_id: input.botId ?? 'B0OTHER',
    ...(input.user ? { user: input.user } : {}),
    ...(input.appId ? { app_id: input.appId } : {}),
    team: input.team ?? 'T0FAKE',
    ...(input.blocks ? { blocks: input.blocks } : {}),
    channel: input.channel,
    event_ts: ts,
    channel_type: channelType(input.channel),
    ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
  };
}

/** An `app_home_opened` event for the Home tab. */
export function appHomeOpened(input: { user: string; channel?: string; tab?: 'home' | 'messages'; view?: Record<string, unknown> }): SlackEvent {
  return {
    type: 'app_home_opened',
    user: input.user,
    channel: input.channel ?? `D${input.user}`,
    tab: input.tab ?? 'home',
    event_ts: slackTs(),
    ...(input.view ? { view: input.view } : {}),
  };
}

export interface BlockActionInput extends SigningOptions {
  user: string;
  teamId?: string;
  /** Channel of the message holding the button; omit with `view` for Home tab or modal buttons. */
  channel?: string;
  messageTs?: string;
  threadTs?: string;
  actionId: string;
  value?: string;
  blockId?: string;
  /** Button label; the action id by default. */
  actionText?: string;
  /**
   * The clicked element: a `button` (default) or one button of a `feedback_buttons` element, which
   * Slack reports with the element's action id, the clicked button's value and its text.
   */
  elementType?: 'button' | 'feedback_buttons';
  triggerId?: string;
  responseUrl?: string;
  /** The message as Slack would include it (e.g. taken from the fake's record); a minimal bot message by default. */
  message?: Record<string, unknown>;
  /** The view holding the button, for clicks on the Home tab or in a modal. */
  view?: Record<string, unknown> & { id: string };
  apiAppId?: string;
  botUserId?: string;
  botId?: string;
}

/** Builds the `block_actions` payload Slack sends when a user clicks a button. */
export function blockActionPayload(input: BlockActionInput): Record<string, unknown> {
  const teamId = input.teamId ?? 'T0FAKE';
  const actionTs = slackTs();
  const appId = input.apiAppId ?? 'A0FAKEAPP';
  const blockId = input.blockId ?? randomBytes(3).toString('hex');
  const inMessage = !input.view;
  const messageTs = input.messageTs ?? slackTs();
  const message = input.message ?? {
    type: 'message',
    user: input.botUserId ?? 'UBOT',
    ts: messageTs,
    bot_id: input.botId ?? 'BBOT',
    app_id: appId,
    text: '',
    team: teamId,
    blocks: [],
    ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
  };
  return {
    type: 'block_actions',
    user: { id: input.user, username: input.user.toLowerCase(), name: input.user.toLowerCase(), team_id: teamId },
    api_app_id: appId,
    token: 'fake-verification-token',
    container: inMessage
      ? {
          type: 'message',
          message_ts: messageTs,
          channel_id: input.channel,
          is_ephemeral: false,
          ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
        }
      : { type: 'view', view_id: input.view?.id },
    trigger_id: input.triggerId ?? `${Date.now()}.${randomBytes(6).toString('hex')}`,
    team: { id: teamId, domain: 'fake' },
    enterprise: null,
    is_enterprise_install: false,
    ...(inMessage
      ? {
          channel: { id: input.channel, name: input.channel?.toLowerCase() },
          message,
          response_url: input.responseUrl ?? `https://hooks.slack.test/actions/${teamId}/${Date.now()}/fake`,
        }
      : { view: input.view }),
    state: { values: {} },
    actions: [
      {
        action_id: input.actionId,
        block_id: blockId,
        text: { type: 'plain_text', text: input.actionText ?? input.actionId, emoji: true },
        ...(input.value !== undefined ? { value: input.value } : {}),
        type: input.elementType ?? 'button',
        action_ts: actionTs,
      },
    ],
  };
}

/** Sends a button click as Slack does: form-encoded `payload=<json>` of type `block_actions`, signed. */
export function sendBlockAction(url: string, secret: string, input: BlockActionInput): Promise<SlackDelivery> {
  const body = new URLSearchParams({ payload: JSON.stringify(blockActionPayload(input)) }).toString();
  return postToBolt(url, secret, body, 'application/x-www-form-urlencoded', input);
}

/** An `agent_session_stopped` event: `user` clicked Stop on the agent session of a thread. */
export function agentSessionStopped(input: { channel: string; threadTs: string; user: string; streamingMessageTs?: string[] }): SlackEvent {
  return {
    type: 'agent_session_stopped',
    channel: input.channel,
    thread_ts: input.threadTs,
    user: input.user,
    streaming_message_ts: input.streamingMessageTs ?? [],
    event_ts: slackTs(),
  };
}

/** `app_uninstalled`: Slack sends it once the app is removed from a workspace (its tokens are revoked already). */
export function appUninstalled(): SlackEvent {
  return { type: 'app_uninstalled', event_ts: slackTs() };
}

/** `tokens_revoked`: the user ids whose user tokens (`oauth`) and the bot user ids whose bot tokens (`bot`) were revoked. */
export function tokensRevoked(tokens: { bot?: string[]; oauth?: string[] }): SlackEvent {
  return { type: 'tokens_revoked', tokens: { oauth: tokens.oauth ?? [], bot: tokens.bot ?? [] }, event_ts: slackTs() };
}
