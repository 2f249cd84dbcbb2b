// app_mention: starts (or continues) the chat of the thread the mention is in.
import type { App } from '@slack/bolt';
import type { ListenerDeps } from './deps.js';
import { sharedFiles } from '../../store/trigger-files.js';

export function registerAppMention(app: App, deps: ListenerDeps): void {
  app.event('app_mention', async ({ event, body, context }) => {
    if (!event.user || event.bot_id) return;
    const teamId = body.team_id ?? context.teamId ?? event.team;
    if (!teamId) return;
    const threadTs = event.thread_ts ?? event.ts;
    const files = sharedFiles((event as { files?: unknown }).files);
    const result = await deps.enqueueTrigger(
      { create: true, channelId: event.channel, threadTs, ownerUserId: event.user },
      {
        teamId,
        kind: 'mention',
        dedupeKey: `msg:${event.channel}:${event.ts}`,
        userId: event.user,
        payload: { text: event.text, ts: event.ts, eventId: body.event_id, ...(files.length ? { files } : {}) },
      },
    );
    deps.logger.info(
      { eventId: body.event_id, teamId, triggerId: result?.triggerId, duplicate: result ? !result.created : undefined },
      'app_mention stored',
    );
  });
}
