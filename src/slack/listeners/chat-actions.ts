// Buttons in a thread (next step, approve, retry, pick): a click is decided in Postgres, then acked.
import type { App, BlockAction, ButtonAction } from '@slack/bolt';
import { claimButtonClick } from '../../store/button-choices.js';
import { CHAT_ACTION_PATTERN } from '../action-ids.js';
import type { ListenerDeps } from './deps.js';

export function registerChatActions(app: App, deps: ListenerDeps): void {
  app.action<BlockAction<ButtonAction>>({ type: 'block_actions', action_id: CHAT_ACTION_PATTERN }, async ({ ack, body, action }) => {
    const teamId = body.team?.id ?? body.user.team_id;
    const channelId = body.channel?.id ?? body.container?.channel_id;
    const message = body.message as { ts?: string; thread_ts?: string } | undefined;
    const messageTs = message?.ts ?? (body.container as { message_ts?: string } | undefined)?.message_ts;
    if (!teamId || !channelId || !messageTs) {
      await ack();
      return;
    }
    const threadTs = message?.thread_ts ?? (body.container as { thread_ts?: string } | undefined)?.thread_ts;
    const result = await claimButtonClick(
      deps.db,
      { teamId, channelId, messageTs, ...(threadTs ? { threadTs } : {}), actionId: action.action_id, value: action.value ?? '', userId: body.user.id },
      { adminUserIds: deps.adminUserIds },
    );
    await ack();
    deps.logger.info({ teamId, actionId: action.action_id, ...result }, 'button click decided');
  });
}
