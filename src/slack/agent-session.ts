// The thread's agent session in Slack: agents.sessions.setStatus, paced per workspace, latest status
// wins. A failure here is logged and never fails a turn: the session is a display, the thread is the record.
import { ErrorCode, type WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SessionStatus } from '../agent/session-status.js';
import type { SessionStatusSink } from '../agent/turn.js';
import type { Chat } from '../store/tables.js';
import { SLACK_PACE } from './limits.js';
import type { WorkspaceClients } from './workspace-clients.js';

/** agents.sessions.setStatus is Tier 3: one call per workspace per interval (src/slack/limits.ts). */
export const SESSION_STATUS_INTERVAL_MS = SLACK_PACE.sessionStatusIntervalMs;
/** Tries after a `ratelimited` answer, each after the Retry-After Slack gives. */
export const SESSION_STATUS_RATE_LIMIT_RETRIES = 3;

interface Pending {
  channelId: string;
  threadTs: string;
  initiatorUserId: string;
  status: SessionStatus;
}

interface TeamQueue {
  pending: Map<string, Pending>;
  lastSentAt: number;
  draining: Promise<void> | undefined;
}

export interface AgentSessionOptions {
  intervalMs?: number;
  sleep?(ms: number): Promise<void>;
}

/**
 * Sets thread session statuses, one workspace's calls in order and at most one per interval. A status
 * queued for a thread whose previous status has not gone out yet replaces it (only the latest matters).
 */
export class AgentSessions implements SessionStatusSink {
  private readonly teams = new Map<string, TeamQueue>();
  private closed = false;
  private readonly intervalMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  private readonly clientOf: (teamId: string) => Promise<WebClient | undefined>;

  /** `client`: the one bot token's writer, or each workspace's (OAuth mode; a workspace without an installation gets no status). */
  constructor(
    client: WebClient | WorkspaceClients,
    private readonly logger: Logger,
    options: AgentSessionOptions = {},
  ) {
    this.clientOf = 'forTeam' in client ? async (teamId) => (await client.forTeam(teamId))?.writer : async () => client;
    this.intervalMs = options.intervalMs ?? SESSION_STATUS_INTERVAL_MS;
    // Unref'd: a status still queued never keeps a stopping process alive.
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()));
  }

  set(chat: Chat, status: SessionStatus): void {
    if (this.closed) return;
    let queue = this.teams.get(chat.team_id);
    if (!queue) {
      queue = { pending: new Map(), lastSentAt: 0, draining: undefined };
      this.teams.set(chat.team_id, queue);
    }
    const key = `${chat.channel_id}:${chat.thread_ts}`;
    // Re-inserted at the end: a thread's statuses stay in order with the other threads' ones.
    queue.pending.delete(key);
    queue.pending.set(key, { channelId: chat.channel_id, threadTs: chat.thread_ts, initiatorUserId: chat.owner_user_id, status });
    queue.draining ??= this.drain(chat.team_id, queue);
  }

  /** Drops what is still queued and sends, retries and logs nothing more (the process is stopping). */
  close(): void {
    this.closed = true;
    for (const queue of this.teams.values()) queue.pending.clear();
  }

  /** Resolves when every queued status has been sent (or given up on). */
  async idle(): Promise<void> {
    await Promise.all([...this.teams.values()].map((q) => q.draining));
  }

  private async drain(teamId: string, queue: TeamQueue): Promise<void> {
    try {
      for (;;) {
        const next = queue.pending.entries().next();
        if (next.done || this.closed) return;
        const [key, item] = next.value;
        queue.pending.delete(key);
        const wait = queue.lastSentAt + this.intervalMs - Date.now();
        if (wait > 0) await this.sleep(wait);
        if (this.closed) return;
        await this.send(teamId, item);
        queue.lastSentAt = Date.now();
      }
    } finally {
      queue.draining = undefined;
      if (queue.pending.size > 0 && !this.closed) queue.draining = this.drain(teamId, queue);
    }
  }

  private async send(teamId: string, item: Pending): Promise<void> {
    const log = { component: 'agent-session', teamId, channel: item.channelId, threadTs: item.threadTs, status: item.status };
    const client = await this.clientOf(teamId).catch(() => undefined);
    if (!client) return;
    for (let attempt = 1; ; attempt += 1) {
      try {
        const result = await client.agents.sessions.setStatus({
          channel_id: item.channelId,
          thread_ts: item.threadTs,
          status: item.status,
          initiator_user_id: item.initiatorUserId,
        });
        if (result.warning && !this.closed) this.logger.warn({ ...log, warning: result.warning }, `agents.sessions.setStatus warned: ${result.warning}`);
        return;
      } catch (error) {
        if (this.closed) return;
        const e = error as { code?: string; retryAfter?: number; data?: { error?: string } };
        if (e.code === ErrorCode.RateLimitedError && attempt <= SESSION_STATUS_RATE_LIMIT_RETRIES) {
          const delayMs = Math.max(1, e.retryAfter ?? 1) * 1000;
          this.logger.warn({ ...log, attempt, delayMs }, `agents.sessions.setStatus rate limited; retrying in ${delayMs} ms`);
          await this.sleep(delayMs);
          if (this.closed) return;
          continue;
        }
        this.logger.warn({ ...log, attempt, error: e.data?.error ?? e.code ?? String(error) }, 'could not set the agent session status');
        return;
      }
    }
  }
}
