// The fake Slack's public types: options, recorded calls, messages, files, failures and the handle.
import type { SlackEvent } from './requests.js';
import type { PlanState } from './plan-states.js';
import type { FakeOAuth, OAuthOptions } from './oauth.js';

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
  /** Slack's OAuth v2 for this app: oauth.v2.access answers codes from `FakeSlack.oauth.approveInstall`. */
  oauth?: OAuthOptions;
  /** Answer `invalid_auth` to tokens missing from `teams`. */
  rejectUnknownTokens?: boolean;
  /** The bot token's scopes; when set, a method needing a scope missing here answers `missing_scope`. */
  scopes?: readonly string[];
  /** False: the app is not subscribed to `agent_session_stopped`, and setStatus answers Slack's warning. */
  agentStopSubscribed?: boolean;
  /** Answer chat.postMessage bursts above `rateLimit` with 429 + Retry-After 1 instead of only recording them. */
  enforceRateLimit?: boolean;
  /**
   * Every rate-limit window of this Slack (the default `rateLimit`, `updateRateLimit` and Tier 3 of
   * the agent methods) times this: a Slack `paceScale` times faster, for a bot started with the same
   * SLACK_PACE_SCALE. Default 1: Slack's own limits.
   */
  paceScale?: number;
  /** Burst window for chat.postMessage per channel: more than `max` posts within `windowMs` is a violation. */
  rateLimit?: { max: number; windowMs: number };
  /** chat.update's tier 3: calls per workspace per window (Slack: 50+ a minute). Above it, a violation (a 429 with `enforceRateLimit`). */
  updateRateLimit?: { max: number; windowMs: number };
  /**
   * Block or element types this workspace does not take (e.g. `context_actions`): a message holding
   * one is answered `invalid_blocks`, as Slack answers a block it does not support. Not a violation.
   */
  refuseBlockTypes?: readonly string[];
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
  edited?: { user: string; ts: string };
  /** How many chat.update calls changed it. */
  updates: number;
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
  /** Installs through OAuth, uninstalls, and the tokens issued (FakeSlackOptions.oauth). */
  oauth: FakeOAuth;
  /** Its rate-limit windows as a multiple of Slack's (`FakeSlackOptions.paceScale`): start the bot with this SLACK_PACE_SCALE. */
  paceScale: number;
  calls: SlackCall[];
  violations: string[];
  files: Map<string, FakeFile>;
  /** Latest Home tab published per user. */
  homeViews: Map<string, Record<string, unknown>>;
  ephemerals: FakeEphemeral[];
  /** Agent sessions by `team:channel:thread_ts`, with every status set. */
  sessions: Map<string, FakeAgentSession>;
  /** The session of a thread in the default workspace. */
  session(channel: string, threadTs: string): FakeAgentSession | undefined;
  /** The `agent_session_stopped` event of a click on Stop; throws unless the session is `processing` (Slack shows Stop only then). */
  pressStop(input: { channel: string; threadTs: string; user: string; teamId?: string }): SlackEvent;
  callsTo(method: string): SlackCall[];
  /** Each state of the plan messages Slack took, in order (test/kit/fakes/slack/plan-states.ts). */
  planStates(filter?: { channel?: string; threadTs?: string; metadataType?: string }): PlanState[];
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
  /** From now on, refuse messages holding these block or element types (see `refuseBlockTypes` in the options). */
  refuseBlockTypes(types: readonly string[]): void;
  reset(): void;
  stop(): Promise<void>;
}

/** A thread's agent session as Slack keeps it. */
export interface FakeAgentSession {
  teamId: string;
  channel: string;
  threadTs: string;
  status: string;
  title: string;
  initiatorUserId?: string;
  /** Every status set, in order. */
  history: string[];
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
