// A person's message (a mention, or a reply in a thread the bot is in): anyone may talk; spending is the policy's business.
import { boundInbound, INBOUND_LIMITS } from '../input-limits.js';
import { triggerFiles, type SharedFile } from '../../store/trigger-files.js';
import { currentPlan } from '../chat-plan.js';
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
  prepare: async (ctx) => ({
    facts: {
      userId: ctx.trigger.user_id,
      text: String((ctx.trigger.payload as { text?: unknown }).text ?? ''),
      files: triggerFiles(ctx.trigger),
      plan: currentPlan(ctx),
    },
  }),
  render: (facts) => {
    const shared = facts.files.map((f) => `"${f.name}" (file id ${f.id}, ${f.mimetype}, ${f.size} bytes)`);
    const attached = shared.length ? `\n[Files shared with this message: ${shared.join('; ')}. benchmark-import makes one a benchmark.]` : '';
    return withPlan(`[Slack message from <@${facts.userId}>]\n${boundInbound(facts.text, INBOUND_LIMITS.messageText)}${attached}`, facts.plan);
  },
};
