// The fake workspace's state: the workspaces tokens belong to, messages, Home views, files, calls and violations.
import type { FakeAgentSession, FakeEphemeral, FakeSlackTeam, FakeFile, FakeMessage, FakeSlackOptions, SlackCall, SlackEventFile } from './types.js';
import { slackTs } from './requests.js';
import type { Team } from './wire.js';

/** Everything the method handlers read and change; one per fake server. */
export interface Workspace {
  options: FakeSlackOptions;
  defaultTeam: Team;
  /** Origin of the server, set once it listens. */
  baseUrl: string;
  calls: SlackCall[];
  violations: string[];
  messages: FakeMessage[];
  ephemerals: FakeEphemeral[];
  /** Agent sessions by `team:channel:thread_ts`. */
  sessions: Map<string, FakeAgentSession>;
  /** Latest Home tab published per user. */
  homeViews: Map<string, Record<string, unknown>>;
  /** Files the bot uploads. */
  files: Map<string, FakeFile>;
  /** Files users shared. */
  sharedFiles: Map<string, { file: SlackEventFile; content: Buffer; hidden: boolean }>;
  /** Block and element types this workspace refuses with `invalid_blocks`. */
  refusedBlockTypes: Set<string>;
  /** The workspace a token belongs to; undefined for an unknown token when `rejectUnknownTokens`, or a revoked one. */
  teamFor(token: string): Team | undefined;
  /** Tokens issued through OAuth (test/kit/fakes/slack/oauth.ts): the workspace, null once revoked or expired. */
  issuedTeam?: (token: string) => Team | null | undefined;
  /** A workspace as the fake resolves it, its unset fields from the default workspace. */
  toTeam(known: FakeSlackTeam): Team;
  findMessage(channel: string | undefined, ts: string | undefined): FakeMessage | undefined;
  nextTs(): string;
  nextId(prefix: string): string;
  /** Forgets every message, view, file, call and violation (ids keep counting). */
  clear(): void;
}

export function createWorkspace(options: FakeSlackOptions): Workspace {
  const defaultTeam: Team = {
    teamId: options.teamId ?? 'T0FAKE',
    teamName: options.teamName ?? 'Fake Workspace',
    domain: options.domain ?? 'fake',
    botUserId: options.botUserId ?? 'UBOT',
    botId: options.botId ?? 'BBOT',
    appId: options.appId ?? 'A0FAKEAPP',
  };
  let counter = 0;
  const ws: Workspace = {
    options,
    defaultTeam,
    baseUrl: '',
    calls: [],
    violations: [],
    messages: [],
    ephemerals: [],
    sessions: new Map(),
    homeViews: new Map(),
    files: new Map(),
    sharedFiles: new Map(),
    refusedBlockTypes: new Set(options.refuseBlockTypes ?? []),
    toTeam: (known) => ({
      teamId: known.teamId,
      teamName: known.teamName ?? known.teamId,
      domain: known.domain ?? known.teamId.toLowerCase(),
      botUserId: known.botUserId ?? defaultTeam.botUserId,
      botId: known.botId ?? defaultTeam.botId,
      appId: defaultTeam.appId,
      ...(known.enterpriseId ? { enterpriseId: known.enterpriseId } : {}),
    }),
    teamFor: (token) => {
      const issued = ws.issuedTeam?.(token);
      if (issued !== undefined) return issued ?? undefined;
      const known = options.teams?.[token];
      if (known) return ws.toTeam(known);
      return options.rejectUnknownTokens ? undefined : defaultTeam;
    },
    findMessage: (channel, ts) => ws.messages.find((m) => m.channel === channel && m.ts === ts),
    // One clock with the events the tests send (slackTs): in Slack a ts is unique within a channel,
    // and a bot reply stamped like a user's seeded message would show up in that message's thread.
    nextTs: () => slackTs(),
    nextId: (prefix) => `${prefix}${String((counter += 1)).padStart(9, '0')}`,
    clear: () => {
      ws.calls.length = 0;
      ws.violations.length = 0;
      ws.ephemerals.length = 0;
      ws.messages.length = 0;
      ws.files.clear();
      ws.sharedFiles.clear();
      ws.homeViews.clear();
      ws.sessions.clear();
    },
  };
  return ws;
}
