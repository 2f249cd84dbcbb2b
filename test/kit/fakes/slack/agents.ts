// Agent sessions: agents.sessions.setStatus as Slack documents it (statuses, thread-scoped sessions,
// the 200-character title, customization needing chat:write.customize, Tier 3 rate), and the Stop
// button, which Slack shows only while a session is `processing`.
import { agentSessionStopped, type SlackEvent } from './requests.js';
import type { Workspace } from './state.js';
import type { FakeAgentSession } from './types.js';
import { fail, ok, str, type Answer, type MethodHandler } from './wire.js';

export const SESSION_STATUSES = ['active', 'processing', 'suspended', 'closed'] as const;
/** Title of a new session: at most 200 characters. */
export const SESSION_TITLE_MAX = 200;
/** Tier 3: about 50 calls a minute per workspace. */
export const TIER3_PER_MINUTE = 50;

export const sessionKey = (teamId: string, channel: string, threadTs: string): string => `${teamId}:${channel}:${threadTs}`;

export function agentMethods(ws: Workspace): Record<string, MethodHandler> {
  const callTimes = new Map<string, number[]>();

  /** Tier 3 per workspace: a burst above it is a violation, and a 429 with `enforceRateLimit`. */
  const rateLimited = (method: string, teamId: string): Answer | undefined => {
    const now = Date.now();
    const windowMs = 60_000 * (ws.options.paceScale ?? 1);
    const times = (callTimes.get(teamId) ?? []).filter((t) => now - t < windowMs);
    if (times.length >= TIER3_PER_MINUTE) {
      ws.violations.push(`${method}: more than ${TIER3_PER_MINUTE} calls in ${windowMs} ms for ${teamId} (Tier 3)`);
      if (ws.options.enforceRateLimit) {
        callTimes.set(teamId, times);
        return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'Retry-After': '1' } };
      }
    }
    times.push(now);
    callTimes.set(teamId, times);
    return undefined;
  };

  const refuse = (method: string, error: string, why: string): Answer => {
    ws.violations.push(`${method}: ${why}`);
    return fail(error);
  };

  return {
    'agents.sessions.setStatus': ({ method, args, team }) => {
      const limited = rateLimited(method, team.teamId);
      if (limited) return limited;
      const status = str(args.status);
      if (!status) return refuse(method, 'invalid_arguments', 'status is required');
      if (!(SESSION_STATUSES as readonly string[]).includes(status)) {
        return refuse(method, 'invalid_arguments', `status "${status}" is not one of ${SESSION_STATUSES.join(', ')}`);
      }
      const channel = str(args.channel_id);
      if (!channel) return refuse(method, 'invalid_arguments', 'channel_id is required for a session in a channel');
      const threadTs = str(args.thread_ts);
      if (!threadTs) return refuse(method, 'invalid_arguments', 'thread_ts is required for a thread-based session in a channel or DM');
      const title = str(args.title);
      if (title !== undefined && title.length > SESSION_TITLE_MAX) {
        return refuse(method, 'invalid_arguments', `title is ${title.length} characters (max ${SESSION_TITLE_MAX})`);
      }
      for (const field of ['icon_emoji', 'icon_url', 'username']) {
        if (args[field] !== undefined) return fail('missing_scope', { needed: 'chat:write.customize', provided: ws.options.scopes?.join(',') ?? '' });
      }
      if (ws.options.scopes && !ws.options.scopes.includes('assistant:write')) {
        return fail('missing_scope', { needed: 'assistant:write', provided: ws.options.scopes.join(',') });
      }
      if (!ws.findMessage(channel, threadTs)) ws.violations.push(`${method}: thread_ts ${threadTs} is not a message in ${channel}`);
      const key = sessionKey(team.teamId, channel, threadTs);
      let session = ws.sessions.get(key);
      if (!session) {
        session = {
          teamId: team.teamId,
          channel,
          threadTs,
          status,
          title: title ?? '',
          ...(str(args.initiator_user_id) ? { initiatorUserId: str(args.initiator_user_id)! } : {}),
          history: [],
        };
        ws.sessions.set(key, session);
      }
      session.status = status;
      session.history.push(status);
      const warning = ws.options.agentStopSubscribed === false ? { warning: 'missing_agent_session_stopped_event_subscription' } : {};
      return ok({ status, agent_status: status, title: session.title, ...warning });
    },
  };
}

/**
 * The event Slack sends when `user` clicks Stop on the session of a thread. Slack shows the button
 * only while the session is `processing`: anything else is an error here, as no one could click it.
 */
export function pressStop(ws: Workspace, input: { channel: string; threadTs: string; user: string; teamId?: string }): SlackEvent {
  const session = ws.sessions.get(sessionKey(input.teamId ?? ws.defaultTeam.teamId, input.channel, input.threadTs));
  if (!session) throw new Error(`fake Slack: thread ${input.threadTs} in ${input.channel} has no agent session, so no Stop button`);
  if (session.status !== 'processing') throw new Error(`fake Slack: the session of ${input.threadTs} is ${session.status}; Slack shows Stop only while processing`);
  return agentSessionStopped({ channel: input.channel, threadTs: input.threadTs, user: input.user });
}

export type { FakeAgentSession };
