// Feedback on a verdict (👍 / 👎, the feedback_buttons element or its plain stand-in): the vote is
// stored with its ephemeral answer in one statement, then acked; the owner's Home tab is refreshed.
import type { App, BlockAction, ButtonAction, FeedbackButtonsAction } from '@slack/bolt';
import { parseVote, recordVerdictVote } from '../../store/verdict-feedback.js';
import { VERDICT_FEEDBACK_PATTERN } from '../action-ids.js';
import type { ListenerDeps } from './deps.js';

export function registerVerdictFeedback(app: App, deps: ListenerDeps): void {
  app.action<BlockAction<FeedbackButtonsAction | ButtonAction>>({ type: 'block_actions', action_id: VERDICT_FEEDBACK_PATTERN }, async ({ ack, body, action }) => {
    const teamId = body.team?.id ?? body.user.team_id;
    const channelId = body.channel?.id ?? body.container?.channel_id;
    const message = body.message as { ts?: string; thread_ts?: string } | undefined;
    const messageTs = message?.ts ?? (body.container as { message_ts?: string } | undefined)?.message_ts;
    const vote = parseVote(action.value);
    if (!teamId || !channelId || !messageTs || !vote) {
      await ack();
      deps.logger.warn({ teamId, actionId: action.action_id, value: action.value }, 'feedback click without a message or a vote; ignored');
      return;
    }
    const threadTs = message?.thread_ts ?? (body.container as { thread_ts?: string } | undefined)?.thread_ts;
    // One fast statement stores the vote before the ack, so an acknowledged vote is never lost.
    const result = await recordVerdictVote(deps.db, { teamId, channelId, messageTs, ...(threadTs ? { threadTs } : {}), userId: body.user.id, vote });
    await ack();
    deps.logger.info({ teamId, actionId: action.action_id, vote, ...result }, 'verdict feedback recorded');
    if (result.outcome !== 'recorded') return;
    // The owner's Activity log shows the vote on the verdict's line. Queued through the Home
    // scheduler's per-person job key, so publishes stay serialized per person.
    await deps
      .enqueueHome(teamId, result.ownerUserId)
      .catch((error: unknown) => deps.logger.warn({ err: error, teamId, owner: result.ownerUserId }, 'could not queue a Home refresh after feedback'));
  });
}
