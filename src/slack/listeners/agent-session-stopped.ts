// agent_session_stopped: Slack's Stop button on a thread's agent session becomes a `stop` trigger of its chat.
import type { App } from '@slack/bolt';
import type { ListenerDeps } from './deps.js';

export function registerAgentSessionStopped(app: App, deps: ListenerDeps): void {
  app.event('agent_session_stopped', async ({ event, body, context }) => {
    const teamId = body.team_id ?? context.teamId;
    if (!teamId || !event.user || !event.thread_ts) return;
    const result = await deps.enqueueTrigger(
      { create: false, channelId: event.channel, threadTs: event.thread_ts },
      {
        teamId,
        kind: 'stop',
        dedupeKey: `stop:${event.channel}:${event.event_ts}`,
        userId: event.user,
        payload: { eventId: body.event_id, eventTs: event.event_ts, streamingMessageTs: event.streaming_message_ts ?? [] },
      },
    );
    deps.logger.info(
      { eventId: body.event_id, teamId, triggerId: result?.triggerId, duplicate: result ? !result.created : undefined, known: result !== undefined },
      'agent_session_stopped stored',
    );
  });
}
