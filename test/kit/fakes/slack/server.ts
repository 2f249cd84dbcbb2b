// Fake Slack Web API on loopback: answers like slack.com/api, records every call and checks Slack's limits.
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { validateBlocks, validateView, type BlockProblem } from './block-kit.js';
import { slackTs } from './requests.js';

/** A workspace the fake knows, selected by the token a call carries. */
export interface FakeSlackTeam {
  teamId: string;
  teamName?: string;
  /** Workspace subdomain; URLs look like `https://<domain>.slack.test/`. */
  domain?: string;
  botUserId?: string;
  botId?: string;
  enterpriseId?: string;
}

export interface FakeSlackOptions {
  /** Token -> workspace. Tokens not listed belong to the default workspace (unless `rejectUnknownTokens`). */
  teams?: Record<string, FakeSlackTeam>;
  /** Default workspace id, `T0FAKE` unless set. */
  teamId?: string;
  teamName?: string;
  domain?: string;
  /** The bot's user id in the default workspace, `UBOT` unless set. */
  botUserId?: string;
  /** The bot's bot id in the default workspace, `BBOT` unless set. */
  botId?: string;
  appId?: string;
  /** Answer `invalid_auth` to tokens missing from `teams`. */
  rejectUnknownTokens?: boolean;
  /** Answer chat.postMessage bursts above `rateLimit` with 429 + Retry-After 1 instead of only recording them. */
  enforceRateLimit?: boolean;
  /** Burst window for chat.postMessage per channel: more than `max` posts within `windowMs` is a violation. */
  rateLimit?: { max: number; windowMs: number };
  /** Extra fields merged into users.info answers, by user id. */
  users?: Record<string, Record<string, unknown>>;
  /** Extra fields merged into conversations.info answers, by channel id. */
  channels?: Record<string, Record<string, unknown>>;
}

/** One HTTP request the fake answered, in arrival order. */
export interface SlackCall {
  /** API method, e.g. `chat.postMessage`; `upload` for a file upload POST to an upload_url. */
  method: string;
  /** Arguments with JSON-valued form fields (blocks, view, metadata…) parsed back into values. */
  args: Record<string, unknown>;
  at: number;
  token?: string;
  teamId?: string;
  /** HTTP status answered. */
  status: number;
  /** The JSON body answered (or the text body for uploads). */
  response: Record<string, unknown> | string;
}

/** A message as it currently stands in the fake workspace. */
export interface FakeMessage {
  channel: string;
  ts: string;
  threadTs?: string;
  user: string;
  botId?: string;
  appId?: string;
  team?: string;
  text: string;
  blocks?: unknown[];
  attachments?: unknown[];
  metadata?: { event_type: string; event_payload: unknown };
  files?: { id: string; name: string; title?: string }[];
  replyBroadcast?: boolean;
  edited?: { user: string; ts: string };
  /** How many chat.update calls changed it. */
  updates: number;
  deleted: boolean;
  /** True for messages added with `seedMessage` rather than posted through the API. */
  seeded: boolean;
}

export interface FakeEphemeral {
  channel: string;
  user: string;
  messageTs: string;
  threadTs?: string;
  text: string;
  blocks?: unknown[];
}

export interface FakeFile {
  id: string;
  filename: string;
  title?: string;
  /** Length the bot announced in files.getUploadURLExternal. */
  declaredLength: number;
  content: Buffer;
  completed: boolean;
  channelId?: string;
  threadTs?: string;
  initialComment?: string;
}

/** A file a user shared, as Slack describes it in a message event's `files` (the fields the bot reads and the usual others). */
export interface SlackEventFile {
  id: string;
  created: number;
  timestamp: number;
  name: string;
  title: string;
  mimetype: string;
  filetype: string;
  pretty_type: string;
  user: string;
  user_team: string;
  editable: boolean;
  size: number;
  mode: 'hosted';
  is_external: boolean;
  external_type: string;
  is_public: boolean;
  public_url_shared: boolean;
  display_as_bot: boolean;
  username: string;
  url_private: string;
  url_private_download: string;
  permalink: string;
  permalink_public: string;
  has_rich_preview: boolean;
  file_access: string;
}

export interface ShareFileInput {
  name: string;
  content: string | Buffer;
  /** Default `text/plain`, as Slack labels a `.jsonl` file. */
  mimetype?: string;
  user?: string;
  /** Bytes announced in the event's `size` (default: the content's length). */
  announcedSize?: number;
  /** The bot may not read it (no `files:read`, or shared where the bot is not): Slack answers its sign-in page. */
  hiddenFromBot?: boolean;
}

export interface FakeReaction {
  channel: string;
  ts: string;
  name: string;
  user: string;
}

/** How the next calls to a method fail: 429 carries `Retry-After`, 200 answers `{ ok: false, error }`. */
export interface SlackFailure {
  status: number;
  /** Seconds, sent as the `Retry-After` header (defaults to 1 for 429). */
  retryAfter?: number;
  /** Slack error code in the body; `ratelimited` for 429, `internal_error` for 5xx, `fatal_error` otherwise. */
  error?: string;
}

export interface FakeSlack {
  /** Origin of the server, e.g. `http://127.0.0.1:1234`. */
  baseUrl: string;
  /** Value for the WebClient's `slackApiUrl`: `<baseUrl>/api/`. */
  apiUrl: string;
  calls: SlackCall[];
  violations: string[];
  files: Map<string, FakeFile>;
  /** Latest Home tab published per user. */
  homeViews: Map<string, Record<string, unknown>>;
  /** Modals opened, pushed or updated, by view id. */
  modals: Map<string, Record<string, unknown>>;
  ephemerals: FakeEphemeral[];
  reactions: FakeReaction[];
  callsTo(method: string): SlackCall[];
  messages(channel?: string, threadTs?: string): FakeMessage[];
  seedMessage(message: SeedMessage): FakeMessage;
  /**
   * Stores a file as if a user had uploaded it and returns its `files[]` entry for an event. Its
   * `url_private_download` answers the content to a request with `Authorization: Bearer <token>`,
   * and Slack's HTML sign-in page (status 200) to one without.
   */
  shareFile(file: ShareFileInput): SlackEventFile;
  /** Files users shared (see `shareFile`), by id. */
  sharedFiles: Map<string, { file: SlackEventFile; content: Buffer; hidden: boolean }>;
  waitFor(predicate: (call: SlackCall) => boolean, timeoutMs?: number): Promise<SlackCall>;
  failNext(method: string, n: number, response: SlackFailure): void;
  reset(): void;
  stop(): Promise<void>;
}

/** A message that exists in Slack without the bot having posted it (e.g. the user's mention). */
export interface SeedMessage {
  channel: string;
  user: string;
  text: string;
  ts?: string;
  threadTs?: string;
  botId?: string;
  blocks?: unknown[];
}

interface Team {
  teamId: string;
  teamName: string;
  domain: string;
  botUserId: string;
  botId: string;
  appId: string;
  enterpriseId?: string;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

interface Ctx {
  method: string;
  args: Record<string, unknown>;
  team: Team;
}

const TEXT_ARGS = new Set([
  'text',
  'markdown_text',
  'initial_comment',
  'title',
  'alt_text',
  'filename',
  'name',
  'username',
  'icon_emoji',
  'icon_url',
  'query',
  'content',
  'private_metadata',
  'value',
]);

const ok = (body: Record<string, unknown> = {}): Answer => ({ status: 200, body: { ok: true, ...body } });
const fail = (error: string, extra: Record<string, unknown> = {}): Answer => ({
  status: 200,
  body: { ok: false, error, ...extra },
});

const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;
const truthy = (value: unknown): boolean => value === true || value === 'true' || value === '1' || value === 1;
const isObj = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

interface MultipartPart {
  name: string;
  filename?: string;
  data: Buffer;
}

function parseMultipart(body: Buffer, contentType: string): MultipartPart[] {
  const match = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary) return [];
  const delimiter = Buffer.from(`--${boundary.trim()}`);
  const parts: MultipartPart[] = [];
  let start = body.indexOf(delimiter);
  while (start !== -1) {
    start += delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    if (body[start] === 13 && body[start + 1] === 10) start += 2;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    let part = body.subarray(start, next);
    if (part.length >= 2 && part[part.length - 2] === 13 && part[part.length - 1] === 10) {
      part = part.subarray(0, part.length - 2);
    }
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd !== -1) {
      const headers = part.subarray(0, headerEnd).toString('utf8');
      const filename = /filename="([^"]*)"/i.exec(headers)?.[1];
      parts.push({
        name: /;\s*name="([^"]*)"/i.exec(headers)?.[1] ?? '',
        ...(filename !== undefined ? { filename } : {}),
        data: part.subarray(headerEnd + 4),
      });
    }
    start = next;
  }
  return parts;
}

function decodeFormValue(key: string, value: string): unknown {
  if (TEXT_ARGS.has(key)) return value;
  const first = value.trimStart()[0];
  if (first !== '[' && first !== '{') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

function parseArgs(body: Buffer, contentType: string, query: URLSearchParams): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [key, value] of query) args[key] = decodeFormValue(key, value);
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (body.length === 0) return args;
  if (mediaType === 'application/json') {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    if (isObj(parsed)) Object.assign(args, parsed);
  } else if (mediaType === 'multipart/form-data') {
    for (const part of parseMultipart(body, contentType)) {
      args[part.name] = part.filename !== undefined ? part.data : decodeFormValue(part.name, part.data.toString('utf8'));
    }
  } else {
    for (const [key, value] of new URLSearchParams(body.toString('utf8'))) args[key] = decodeFormValue(key, value);
  }
  return args;
}

/**
 * Starts the fake Slack Web API on an ephemeral loopback port. Point a WebClient at it with
 * `new WebClient(token, { slackApiUrl: fake.apiUrl })`.
 */
export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const defaultTeam: Team = {
    teamId: options.teamId ?? 'T0FAKE',
    teamName: options.teamName ?? 'Fake Workspace',
    domain: options.domain ?? 'fake',
    botUserId: options.botUserId ?? 'UBOT',
    botId: options.botId ?? 'BBOT',
    appId: options.appId ?? 'A0FAKEAPP',
  };
  const rateLimit = options.rateLimit ?? { max: 3, windowMs: 1000 };
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);

  const calls: SlackCall[] = [];
  const violations: string[] = [];
  const files = new Map<string, FakeFile>();
  let counter = 0;
  let baseUrl = '';

  const homeViews = new Map<string, Record<string, unknown>>();
  const modals = new Map<string, Record<string, unknown>>();
  const ephemerals: FakeEphemeral[] = [];
  const reactions: FakeReaction[] = [];
  const allMessages: FakeMessage[] = [];
  const failures = new Map<string, SlackFailure[]>();
  const postTimes = new Map<string, number[]>();
  // One clock with the events the tests send (slackTs): in Slack a ts is unique within a channel,
  // and a bot reply stamped like a user's seeded message would show up in that message's thread.
  const nextTs = (): string => slackTs();
  const nextId = (prefix: string): string => `${prefix}${String((counter += 1)).padStart(9, '0')}`;

  const teamFor = (token: string): Team | undefined => {
    const known = options.teams?.[token];
    if (known) {
      return {
        teamId: known.teamId,
        teamName: known.teamName ?? known.teamId,
        domain: known.domain ?? known.teamId.toLowerCase(),
        botUserId: known.botUserId ?? defaultTeam.botUserId,
        botId: known.botId ?? defaultTeam.botId,
        appId: defaultTeam.appId,
        ...(known.enterpriseId ? { enterpriseId: known.enterpriseId } : {}),
      };
    }
    return options.rejectUnknownTokens ? undefined : defaultTeam;
  };

  const findMessage = (channel: string | undefined, ts: string | undefined): FakeMessage | undefined =>
    allMessages.find((m) => !m.deleted && m.channel === channel && m.ts === ts);

  const invalid = (method: string, error: string, problems: BlockProblem[]): Answer => {
    const details = problems.map((p) => `${p.message} [json-pointer:${p.pointer}]`);
    for (const detail of details) violations.push(`${method}: ${detail}`);
    return fail(error, { errors: details, response_metadata: { messages: details.map((d) => `[ERROR] ${d}`) } });
  };

  const checkMessageContent = (
    method: string,
    args: Record<string, unknown>,
    requireContent: boolean,
  ): Answer | undefined => {
    const text = typeof args.text === 'string' ? args.text : typeof args.markdown_text === 'string' ? args.markdown_text : undefined;
    if (requireContent && !text && args.blocks === undefined && args.attachments === undefined) return fail('no_text');
    if (text !== undefined && text.length > 40_000) {
      violations.push(`${method}: text is ${text.length} characters (max 40000)`);
      return fail('msg_too_long');
    }
    if (args.blocks !== undefined) {
      if (!Array.isArray(args.blocks)) return invalid(method, 'invalid_blocks_format', [{ pointer: '/blocks', message: 'blocks must be a JSON array' }]);
      const problems = validateBlocks(args.blocks, 'message');
      if (problems.length > 0) return invalid(method, 'invalid_blocks', problems);
    }
    if (Array.isArray(args.attachments)) {
      const problems = args.attachments.flatMap((a: unknown, i) =>
        isObj(a) && a.blocks !== undefined ? validateBlocks(a.blocks, 'message', `/attachments/${i}/blocks`) : [],
      );
      if (problems.length > 0) return invalid(method, 'invalid_attachments', problems);
    }
    if (args.metadata !== undefined) {
      const m = args.metadata;
      if (!isObj(m) || typeof m.event_type !== 'string' || !isObj(m.event_payload)) {
        violations.push(`${method}: metadata needs a string event_type and an object event_payload`);
        return fail('invalid_metadata_format');
      }
    }
    return undefined;
  };

  const messageJson = (m: FakeMessage, includeMetadata: boolean): Record<string, unknown> => {
    const replies = allMessages.filter((r) => !r.deleted && r.channel === m.channel && r.threadTs === m.ts && r.ts !== m.ts);
    return {
      type: 'message',
      ...(m.botId && m.seeded ? { subtype: 'bot_message' } : {}),
      user: m.user,
      text: m.text,
      ts: m.ts,
      ...(m.team ? { team: m.team } : {}),
      ...(m.botId ? { bot_id: m.botId } : {}),
      ...(m.appId ? { app_id: m.appId } : {}),
      ...(m.blocks ? { blocks: m.blocks } : {}),
      ...(m.attachments ? { attachments: m.attachments } : {}),
      ...(m.files ? { files: m.files.map((f) => ({ id: f.id, name: f.name, title: f.title ?? f.name })) } : {}),
      ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
      ...(replies.length > 0 ? { thread_ts: m.ts, reply_count: replies.length, latest_reply: replies.at(-1)?.ts } : {}),
      ...(m.edited ? { edited: m.edited } : {}),
      ...(includeMetadata && m.metadata ? { metadata: m.metadata } : {}),
    };
  };

  const paginate = (list: FakeMessage[], args: Record<string, unknown>): Answer => {
    const limit = Math.min(Math.max(Number(args.limit ?? 1000) || 1000, 1), 1000);
    const cursor = str(args.cursor);
    const offset = cursor ? Number(Buffer.from(cursor, 'base64').toString('utf8').replace(/^offset:/, '')) || 0 : 0;
    const page = list.slice(offset, offset + limit);
    const hasMore = offset + limit < list.length;
    return ok({
      messages: page.map((m) => messageJson(m, truthy(args.include_all_metadata))),
      has_more: hasMore,
      response_metadata: { next_cursor: hasMore ? Buffer.from(`offset:${offset + limit}`).toString('base64') : '' },
    });
  };

  const viewJson = (team: Team, id: string, view: Record<string, unknown>): Record<string, unknown> => ({
    id,
    team_id: team.teamId,
    type: view.type,
    blocks: view.blocks ?? [],
    private_metadata: view.private_metadata ?? '',
    callback_id: view.callback_id ?? '',
    state: { values: {} },
    hash: `${Date.now()}.${id}`,
    title: view.title ?? null,
    close: view.close ?? null,
    submit: view.submit ?? null,
    clear_on_close: false,
    notify_on_close: false,
    root_view_id: id,
    previous_view_id: null,
    app_id: team.appId,
    external_id: view.external_id ?? '',
    app_installed_team_id: team.teamId,
    bot_id: team.botId,
  });

  const handlers: Record<string, (ctx: Ctx) => Answer> = {
    'api.test': ({ args }) => ok({ args }),
    'auth.test': ({ team }) =>
      ok({
        url: `https://${team.domain}.slack.test/`,
        team: team.teamName,
        user: 'verdict-bot',
        team_id: team.teamId,
        user_id: team.botUserId,
        bot_id: team.botId,
        is_enterprise_install: false,
        ...(team.enterpriseId ? { enterprise_id: team.enterpriseId } : {}),
      }),
    'chat.postMessage': ({ method, args, team }) => {
      const requested = str(args.channel);
      if (!requested) return fail('channel_not_found');
      const channel = /^[UW]/.test(requested) ? `D${requested}` : requested;
      const refused = checkMessageContent(method, args, true);
      if (refused) return refused;
      const threadTs = str(args.thread_ts);
      const message: FakeMessage = {
        channel,
        ts: nextTs(),
        ...(threadTs ? { threadTs } : {}),
        user: team.botUserId,
        botId: team.botId,
        appId: team.appId,
        team: team.teamId,
        text: String(args.text ?? args.markdown_text ?? ''),
        ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
        ...(Array.isArray(args.attachments) ? { attachments: args.attachments } : {}),
        ...(isObj(args.metadata) ? { metadata: args.metadata as FakeMessage['metadata'] } : {}),
        ...(truthy(args.reply_broadcast) ? { replyBroadcast: true } : {}),
        updates: 0,
        deleted: false,
        seeded: false,
      };
      allMessages.push(message);
      return ok({ channel, ts: message.ts, message: messageJson(message, true) });
    },
    'chat.update': ({ method, args, team }) => {
      const channel = str(args.channel);
      if (!channel) return fail('channel_not_found');
      const message = findMessage(channel, str(args.ts));
      if (!message) return fail('message_not_found');
      if (message.user !== team.botUserId) return fail('cant_update_message');
      if (args.text === undefined && args.blocks === undefined && args.attachments === undefined && args.markdown_text === undefined) {
        return fail('no_text');
      }
      const refused = checkMessageContent(method, args, false);
      if (refused) return refused;
      if (args.text !== undefined || args.markdown_text !== undefined) message.text = String(args.text ?? args.markdown_text);
      if (Array.isArray(args.blocks)) message.blocks = args.blocks;
      if (Array.isArray(args.attachments)) message.attachments = args.attachments;
      if (isObj(args.metadata)) message.metadata = args.metadata as FakeMessage['metadata'];
      message.edited = { user: team.botUserId, ts: nextTs() };
      message.updates += 1;
      return ok({ channel, ts: message.ts, text: message.text, message: messageJson(message, true) });
    },
    'chat.delete': ({ args, team }) => {
      const channel = str(args.channel);
      if (!channel) return fail('channel_not_found');
      const message = findMessage(channel, str(args.ts));
      if (!message) return fail('message_not_found');
      if (message.user !== team.botUserId) return fail('cant_delete_message');
      message.deleted = true;
      return ok({ channel, ts: message.ts });
    },
    'chat.postEphemeral': ({ method, args }) => {
      const channel = str(args.channel);
      if (!channel) return fail('channel_not_found');
      const user = str(args.user);
      if (!user) return fail('user_not_in_channel');
      const refused = checkMessageContent(method, args, true);
      if (refused) return refused;
      const threadTs = str(args.thread_ts);
      const ephemeral: FakeEphemeral = {
        channel,
        user,
        messageTs: nextTs(),
        ...(threadTs ? { threadTs } : {}),
        text: String(args.text ?? ''),
        ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
      };
      ephemerals.push(ephemeral);
      return ok({ message_ts: ephemeral.messageTs });
    },
    'chat.getPermalink': ({ args, team }) => {
      const channel = str(args.channel);
      const ts = str(args.message_ts);
      if (!channel) return fail('channel_not_found');
      if (!ts) return fail('message_not_found');
      const message = allMessages.find((m) => m.channel === channel && m.ts === ts);
      const thread = message?.threadTs && message.threadTs !== ts ? `?thread_ts=${message.threadTs}&cid=${channel}` : '';
      return ok({ channel, permalink: `https://${team.domain}.slack.test/archives/${channel}/p${ts.replace('.', '')}${thread}` });
    },
    'views.publish': ({ method, args, team }) => {
      const user = str(args.user_id);
      if (!user) return fail('invalid_arguments');
      const problems = validateView(args.view, 'home');
      if (problems.length > 0) return invalid(method, 'invalid_arguments', problems);
      const view = viewJson(team, nextId('V'), args.view as Record<string, unknown>);
      homeViews.set(user, view);
      return ok({ view });
    },
    'views.open': ({ method, args, team }) => {
      if (!str(args.trigger_id)) return fail('invalid_arguments');
      const problems = validateView(args.view, 'modal');
      if (problems.length > 0) return invalid(method, 'invalid_arguments', problems);
      const view = viewJson(team, nextId('V'), args.view as Record<string, unknown>);
      modals.set(String(view.id), view);
      return ok({ view });
    },
    'views.push': (ctx) => handlers['views.open']!(ctx),
    'views.update': ({ method, args, team }) => {
      const id = str(args.view_id) ?? [...modals.values()].find((v) => v.external_id === str(args.external_id))?.id;
      if (typeof id !== 'string' || !modals.has(id)) return fail('not_found');
      const problems = validateView(args.view, 'modal');
      if (problems.length > 0) return invalid(method, 'invalid_arguments', problems);
      const view = viewJson(team, id, args.view as Record<string, unknown>);
      modals.set(id, view);
      return ok({ view });
    },
    'conversations.info': ({ args, team }) => {
      const channel = str(args.channel);
      if (!channel || !/^[CDG][A-Z0-9]+$/.test(channel)) return fail('channel_not_found');
      const isIm = channel.startsWith('D');
      return ok({
        channel: {
          id: channel,
          name: isIm ? undefined : channel.toLowerCase(),
          is_channel: channel.startsWith('C'),
          is_group: channel.startsWith('G'),
          is_im: isIm,
          is_mpim: false,
          is_private: !channel.startsWith('C'),
          is_archived: false,
          is_general: false,
          is_member: true,
          is_ext_shared: false,
          is_shared: false,
          context_team_id: team.teamId,
          created: 1700000000,
          ...(isIm ? { user: channel.slice(1) } : {}),
          ...options.channels?.[channel],
        },
      });
    },
    'conversations.open': ({ args }) => {
      const users = str(args.users)?.split(',').map((u) => u.trim()).filter(Boolean) ?? [];
      const existing = str(args.channel);
      if (existing) return ok({ channel: { id: existing } });
      if (users.length === 0) return fail('users_list_not_supplied');
      const id = users.length === 1 ? `D${users[0]}` : `G${users.join('').slice(0, 20)}`;
      return ok({ channel: { id, ...(truthy(args.return_im) ? { is_im: users.length === 1, user: users[0] } : {}) } });
    },
    'conversations.replies': ({ args }) => {
      const channel = str(args.channel);
      const ts = str(args.ts);
      if (!channel) return fail('channel_not_found');
      if (!ts) return fail('thread_not_found');
      const thread = allMessages
        .filter((m) => !m.deleted && m.channel === channel && (m.ts === ts || m.threadTs === ts))
        .sort((a, b) => Number(a.ts) - Number(b.ts));
      return paginate(thread, args);
    },
    'conversations.history': ({ args }) => {
      const channel = str(args.channel);
      if (!channel) return fail('channel_not_found');
      const top = allMessages
        .filter((m) => !m.deleted && m.channel === channel && (!m.threadTs || m.threadTs === m.ts || m.replyBroadcast))
        .sort((a, b) => Number(b.ts) - Number(a.ts));
      return paginate(top, args);
    },
    'users.info': ({ args, team }) => {
      const user = str(args.user);
      if (!user || !/^[UWB]/.test(user)) return fail('user_not_found');
      const isBot = user === team.botUserId;
      const name = isBot ? 'verdict-bot' : `user-${user.toLowerCase()}`;
      return ok({
        user: {
          id: user,
          team_id: team.teamId,
          name,
          real_name: isBot ? 'Verdict Bot' : `User ${user}`,
          deleted: false,
          is_bot: isBot,
          is_admin: false,
          is_owner: false,
          is_app_user: false,
          tz: 'Europe/London',
          tz_label: 'Greenwich Mean Time',
          tz_offset: 0,
          profile: { display_name: name, real_name: isBot ? 'Verdict Bot' : `User ${user}`, team: team.teamId },
          ...options.users?.[user],
        },
      });
    },
    'files.getUploadURLExternal': ({ args }) => {
      const filename = str(args.filename);
      const length = Number(args.length);
      if (!filename || !Number.isInteger(length) || length < 0) return fail('invalid_arguments');
      const id = nextId('F');
      files.set(id, { id, filename, declaredLength: length, content: Buffer.alloc(0), completed: false });
      return ok({ upload_url: `${baseUrl}/upload/${id}`, file_id: id });
    },
    'files.completeUploadExternal': ({ method, args, team }) => {
      const list = Array.isArray(args.files) ? args.files : undefined;
      if (!list || list.length === 0) return fail('invalid_arguments');
      const entries: FakeFile[] = [];
      for (const item of list) {
        const file = isObj(item) ? files.get(String(item.id)) : undefined;
        if (!file) return fail('file_not_found');
        if (file.content.length === 0 && file.declaredLength > 0) {
          violations.push(`${method}: file ${file.id} completed before its bytes were uploaded`);
          return fail('file_not_found');
        }
        if (isObj(item) && typeof item.title === 'string') file.title = item.title;
        entries.push(file);
      }
      const channel = str(args.channel_id) ?? str(args.channels)?.split(',')[0];
      const threadTs = str(args.thread_ts);
      const comment = str(args.initial_comment);
      for (const file of entries) {
        file.completed = true;
        if (channel) file.channelId = channel;
        if (threadTs) file.threadTs = threadTs;
        if (comment) file.initialComment = comment;
      }
      if (channel) {
        allMessages.push({
          channel,
          ts: nextTs(),
          ...(threadTs ? { threadTs } : {}),
          user: team.botUserId,
          botId: team.botId,
          appId: team.appId,
          team: team.teamId,
          text: comment ?? '',
          files: entries.map((f) => ({ id: f.id, name: f.filename, ...(f.title ? { title: f.title } : {}) })),
          updates: 0,
          deleted: false,
          seeded: false,
        });
      }
      return ok({
        files: entries.map((f) => ({
          id: f.id,
          name: f.filename,
          title: f.title ?? f.filename,
          size: f.content.length,
          url_private: `${baseUrl}/files/${f.id}/${encodeURIComponent(f.filename)}`,
          permalink: `https://${team.domain}.slack.test/files/${team.botUserId}/${f.id}/${encodeURIComponent(f.filename)}`,
        })),
      });
    },
    'reactions.add': ({ args, team }) => {
      const channel = str(args.channel);
      const ts = str(args.timestamp);
      const name = str(args.name);
      if (!channel) return fail('channel_not_found');
      if (!ts || !name) return fail('invalid_arguments');
      if (reactions.some((r) => r.channel === channel && r.ts === ts && r.name === name && r.user === team.botUserId)) {
        return fail('already_reacted');
      }
      reactions.push({ channel, ts, name, user: team.botUserId });
      return ok();
    },
    'reactions.remove': ({ args, team }) => {
      const index = reactions.findIndex(
        (r) => r.channel === str(args.channel) && r.ts === str(args.timestamp) && r.name === str(args.name) && r.user === team.botUserId,
      );
      if (index === -1) return fail('no_reaction');
      reactions.splice(index, 1);
      return ok();
    },
  };

  const rateLimited = (channel: string, now: number): boolean => {
    const times = (postTimes.get(channel) ?? []).filter((t) => now - t < rateLimit.windowMs);
    const exceeded = times.length >= rateLimit.max;
    if (exceeded) {
      violations.push(
        `chat.postMessage: more than ${rateLimit.max} posts to ${channel} within ${rateLimit.windowMs} ms (Slack allows about 1 per second per channel)`,
      );
    }
    if (!(exceeded && options.enforceRateLimit)) times.push(now);
    postTimes.set(channel, times);
    return exceeded && options.enforceRateLimit === true;
  };

  const injected = (method: string): Answer | undefined => {
    const queue = failures.get(method);
    const failure = queue?.shift();
    if (!failure) return undefined;
    if (queue && queue.length === 0) failures.delete(method);
    const error =
      failure.error ?? (failure.status === 429 ? 'ratelimited' : failure.status >= 500 ? 'internal_error' : 'fatal_error');
    const retryAfter = failure.retryAfter ?? (failure.status === 429 ? 1 : undefined);
    return {
      status: failure.status,
      body: { ok: false, error },
      ...(retryAfter !== undefined ? { headers: { 'Retry-After': String(retryAfter) } } : {}),
    };
  };

  const answerApi = (method: string, args: Record<string, unknown>, token: string | undefined): { answer: Answer; team?: Team } => {
    const failure = injected(method);
    if (failure) return { answer: failure };
    if (!token) return { answer: fail('not_authed') };
    const team = teamFor(token);
    if (!team) return { answer: fail('invalid_auth') };
    if (method === 'chat.postMessage') {
      const channel = str(args.channel);
      if (channel && rateLimited(/^[UW]/.test(channel) ? `D${channel}` : channel, Date.now())) {
        return { answer: { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'Retry-After': '1' } }, team };
      }
    }
    const handler = handlers[method];
    if (!handler) return { answer: fail('unknown_method', { req_method: method }), team };
    return { answer: handler({ method, args, team }), team };
  };

  const record = (call: SlackCall): void => {
    calls.push(call);
    emitter.emit('call', call);
  };

  const handleUpload = async (req: IncomingMessage, res: ServerResponse, fileId: string, token: string | undefined) => {
    const body = await readBody(req);
    const file = files.get(fileId);
    const contentType = req.headers['content-type'] ?? '';
    let content = body;
    if (contentType.toLowerCase().startsWith('multipart/form-data')) {
      const parts = parseMultipart(body, contentType);
      const part = parts.find((p) => p.filename !== undefined) ?? parts.find((p) => p.name === 'file' || p.name === 'body');
      content = part?.data ?? Buffer.alloc(0);
    }
    const status = file ? 200 : 404;
    const text = file ? `OK - ${content.length}` : 'file not found';
    if (file) {
      file.content = Buffer.from(content);
      if (content.length !== file.declaredLength) {
        violations.push(`upload: file ${fileId} sent ${content.length} bytes but files.getUploadURLExternal announced ${file.declaredLength}`);
      }
    }
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(text);
    record({ method: 'upload', args: { file_id: fileId, bytes: content.length }, at: Date.now(), ...(token ? { token } : {}), status, response: text });
  };

  const sharedFiles = new Map<string, { file: SlackEventFile; content: Buffer; hidden: boolean }>();
  let sharedCounter = 0;

  /** GET of a shared file's url_private(_download): the bytes with a token, Slack's sign-in page without one. */
  const handleFileDownload = (res: ServerResponse, fileId: string, token: string | undefined) => {
    const shared = sharedFiles.get(fileId);
    const known = token !== undefined && teamFor(token) !== undefined;
    let status = 200;
    let response: string;
    if (!shared) {
      status = 404;
      response = 'file not found';
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(response);
    } else if (!known || shared.hidden) {
      response = '<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to your workspace</body></html>';
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(response);
    } else {
      response = `${shared.content.length} bytes`;
      res.writeHead(200, {
        'content-type': shared.file.mimetype,
        'content-length': String(shared.content.length),
        'content-disposition': `attachment; filename="${shared.file.name}"`,
      }).end(shared.content);
    }
    record({ method: 'files-pri', args: { file_id: fileId }, at: Date.now(), ...(token ? { token } : {}), status, response });
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const auth = req.headers.authorization;
      const headerToken = auth?.toLowerCase().startsWith('bearer ') ? auth.slice(7).trim() : undefined;
      const download = /^\/files-pri\/[A-Z0-9]+-([A-Z0-9]+)\/(?:download\/)?[^/]+$/.exec(url.pathname);
      if (download?.[1] && req.method === 'GET') {
        handleFileDownload(res, download[1], headerToken);
        return;
      }
      const upload = /^\/upload\/([^/]+)$/.exec(url.pathname);
      if (upload?.[1] && req.method === 'POST') {
        await handleUpload(req, res, upload[1], headerToken);
        return;
      }
      const api = /^\/api\/([A-Za-z0-9_.]+)$/.exec(url.pathname);
      if (!api?.[1]) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
        return;
      }
      const method = api[1];
      const body = await readBody(req);
      let args: Record<string, unknown> | undefined;
      try {
        args = parseArgs(body, req.headers['content-type'] ?? '', url.searchParams);
      } catch {
        args = undefined;
      }
      const token = headerToken ?? str(args?.token);
      const { answer, team } = args ? answerApi(method, args, token) : { answer: fail('invalid_json'), team: undefined };
      args ??= { raw: body.toString('utf8') };
      res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', ...answer.headers });
      res.end(JSON.stringify(answer.body));
      record({
        method,
        args,
        at: Date.now(),
        ...(token ? { token } : {}),
        ...(team ? { teamId: team.teamId } : {}),
        status: answer.status,
        response: answer.body,
      });
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    apiUrl: `${baseUrl}/api/`,
    calls,
    violations,
    files,
    homeViews,
    modals,
    ephemerals,
    reactions,
    callsTo: (method) => calls.filter((c) => c.method === method),
    messages: (channel, threadTs) =>
      allMessages.filter(
        (m) =>
          !m.deleted &&
          !m.seeded &&
          (channel === undefined || m.channel === channel) &&
          (threadTs === undefined || m.threadTs === threadTs || m.ts === threadTs),
      ),
    seedMessage: (seed) => {
      const message: FakeMessage = {
        channel: seed.channel,
        ts: seed.ts ?? nextTs(),
        ...(seed.threadTs ? { threadTs: seed.threadTs } : {}),
        user: seed.user,
        ...(seed.botId ? { botId: seed.botId } : {}),
        team: defaultTeam.teamId,
        text: seed.text,
        ...(seed.blocks ? { blocks: seed.blocks } : {}),
        updates: 0,
        deleted: false,
        seeded: true,
      };
      allMessages.push(message);
      return message;
    },
    sharedFiles,
    shareFile: (input) => {
      sharedCounter += 1;
      const id = `F${String(sharedCounter).padStart(10, '0')}`;
      const content = Buffer.isBuffer(input.content) ? input.content : Buffer.from(input.content, 'utf8');
      const now = Math.floor(Date.now() / 1000);
      const team = defaultTeam.teamId;
      const encoded = encodeURIComponent(input.name);
      const extension = /\.([A-Za-z0-9]+)$/.exec(input.name)?.[1]?.toLowerCase() ?? 'text';
      const file: SlackEventFile = {
        id,
        created: now,
        timestamp: now,
        name: input.name,
        title: input.name,
        mimetype: input.mimetype ?? 'text/plain',
        filetype: extension === 'jsonl' ? 'text' : extension,
        pretty_type: extension === 'jsonl' ? 'Plain Text' : extension.toUpperCase(),
        user: input.user ?? 'UUSER',
        user_team: team,
        editable: true,
        size: input.announcedSize ?? content.length,
        mode: 'hosted',
        is_external: false,
        external_type: '',
        is_public: true,
        public_url_shared: false,
        display_as_bot: false,
        username: '',
        url_private: `${baseUrl}/files-pri/${team}-${id}/${encoded}`,
        url_private_download: `${baseUrl}/files-pri/${team}-${id}/download/${encoded}`,
        permalink: `https://${defaultTeam.domain}.slack.test/files/${input.user ?? 'UUSER'}/${id}/${encoded}`,
        permalink_public: `https://slack-files.test/${team}-${id}-0000000000`,
        has_rich_preview: false,
        file_access: 'visible',
      };
      sharedFiles.set(id, { file, content, hidden: input.hiddenFromBot ?? false });
      return file;
    },
    waitFor: (predicate, timeoutMs = 5000) => {
      const found = calls.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise<SlackCall>((resolve, reject) => {
        const onCall = (call: SlackCall) => {
          try {
            if (!predicate(call)) return;
            cleanup();
            resolve(call);
          } catch (error) {
            cleanup();
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`fake Slack: no matching call within ${timeoutMs} ms; calls so far: ${calls.map((c) => c.method).join(', ') || 'none'}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          emitter.off('call', onCall);
        };
        emitter.on('call', onCall);
      });
    },
    failNext: (method, n, response) => {
      const queue = failures.get(method) ?? [];
      for (let i = 0; i < n; i += 1) queue.push({ ...response });
      failures.set(method, queue);
    },
    reset: () => {
      calls.length = 0;
      violations.length = 0;
      ephemerals.length = 0;
      reactions.length = 0;
      allMessages.length = 0;
      files.clear();
      sharedFiles.clear();
      homeViews.clear();
      modals.clear();
      failures.clear();
      postTimes.clear();
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
