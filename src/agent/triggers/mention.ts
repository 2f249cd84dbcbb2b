// A person's message (a mention, or a reply in a thread the bot is in): anyone may talk; spending is the policy's business.
import { boundInbound, INBOUND_LIMITS } from '../input-limits.js';
import { clearStop } from '../../store/agent-sessions.js';
import { triggerFiles, type SharedFile } from '../../store/trigger-files.js';
import { currentPlan } from '../chat-plan.js';
import { mayApprove } from '../spend-guard.js';
import type { Plan } from '../plan.js';
import { withPlan, type TriggerHandler } from './handler.js';

export interface MentionFacts {
  userId: string | null;
  text: string;
  files: SharedFile[];
  plan: Plan | undefined;
}

export const mentionHandler: TriggerHandler<MentionFacts> = {
  authority: 'person',
  automatic: false,
  authorize: () => undefined,
  prepare: async (ctx) => {
    // "Mention me to start again": after Slack's Stop, a message of the owner or an admin (those who
    // may stop) reopens the thread, so what they ask for now can follow a plan and be stopped again.
    if (ctx.chat.stopped_at && mayApprove(ctx, ctx.trigger.user_id)) {
      await clearStop(ctx.db, ctx.chat.team_id, ctx.chat.id);
      ctx.chat.stopped_at = null;
      ctx.chat.stopped_by = null;
      ctx.chat.stop_trigger_id = null;
    }
    return {
      facts: {
        userId: ctx.trigger.user_id,
        text: String((ctx.trigger.payload as { text?: unknown }).text ?? ''),
        files: triggerFiles(ctx.trigger),
        plan: currentPlan(ctx),
      },
    };
  },
  render: (facts) => {
    const shared = facts.files.map((f) => `"${f.name}" (file id ${f.id}, ${f.mimetype}, ${f.size} bytes)`);
    const attached = shared.length ? `\n[Files shared with this message: ${shared.join('; ')}. benchmark-import makes one a benchmark.]` : '';
    return withPlan(`[Slack message from <@${facts.userId}>]\n${boundInbound(facts.text, INBOUND_LIMITS.messageText)}${attached}`, facts.plan);
  },
};
