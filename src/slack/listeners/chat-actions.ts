// Buttons in a thread (next step, approve, retry, pick): each click becomes a button trigger.
import type { App, BlockAction, ButtonAction } from '@slack/bolt';
import { enqueueTrigger } from '../../store/triggers.js';
import { CHAT_ACTION_PATTERN } from '../action-ids.js';
import type { ListenerDeps } from './deps.js';

export function registerChatActions(app: App, deps: ListenerDeps): void {
  app.action<BlockAction<ButtonAction>>({ type: 'block_actions', action_id: CHAT_ACTION_PATTERN }, async ({ ack, body, action }) => {
      const teamId = body.team?.id ?? body.user.team_id;
      const channelId = body.channel?.id ?? body.container?.channel_id;
      const message = body.message as { ts?: string; thread_ts?: string } | undefined;
      const threadTs = message?.thread_ts ?? message?.ts;
      if (!teamId || !channelId || !threadTs) {
        await ack();
        return;
      }
      const result = await enqueueTrigger(
        deps.db,
        { create: false, channelId, threadTs },
        {
          teamId,
          kind: 'button',
          dedupeKey: `action:${channelId}:${action.action_ts}:${body.user.id}`,
          userId: body.user.id,
          payload: {
            actionId: action.action_id,
            value: action.value ?? '',
            label: action.text?.text ?? '',
            messageTs: message?.ts ?? null,
          },
        },
      );
      await ack();
      deps.logger.info({ teamId, actionId: action.action_id, triggerId: result?.triggerId }, 'button stored');
    });
}
