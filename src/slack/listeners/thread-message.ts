// message: a reply in a thread that already has a chat continues it, without a new mention.
import type { App } from '@slack/bolt';
import type { ListenerDeps } from './deps.js';
import { sharedFiles } from '../../store/trigger-files.js';

const HANDLED_SUBTYPES = new Set([undefined, 'thread_broadcast', 'file_share']);

export function registerThreadMessage(app: App, deps: ListenerDeps): void {
  app.event('message', async ({ event, body, context }) => {
    const message = event as {
      subtype?: string;
      user?: string;
      bot_id?: string;
      text?: string;
      ts: string;
      thread_ts?: string;
      channel: string;
      files?: unknown;
    };
    if (!HANDLED_SUBTYPES.has(message.subtype)) return;
    if (!message.user || message.bot_id || !message.thread_ts) return;
    if (context.botUserId && (message.user === context.botUserId || message.text?.includes(`<@${context.botUserId}>`))) {
      return; // the bot's own message, or a mention that app_mention handles
    }
    const teamId = body.team_id ?? context.teamId;
    if (!teamId) return;
    const files = sharedFiles(message.files);
    const result = await deps.enqueueTrigger(
      { create: false, channelId: message.channel, threadTs: message.thread_ts },
      {
        teamId,
        kind: 'reply',
        dedupeKey: `msg:${message.channel}:${message.ts}`,
        userId: message.user,
        payload: { text: message.text ?? '', ts: message.ts, eventId: body.event_id, ...(files.length ? { files } : {}) },
      },
    );
    if (result) deps.logger.info({ eventId: body.event_id, teamId, triggerId: result.triggerId }, 'thread reply stored');
  });
}
