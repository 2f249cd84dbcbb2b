// Activity: one entry per turn, written in the turn's transaction, read by the App Home tab.
import type { Db } from './db.js';
import type { Chat, Trigger, Turn } from './tables.js';

const TRIGGER_LABELS: Record<string, string> = {
  mention: 'Mention',
  reply: 'Thread reply',
  button: 'Button',
  retry: 'Retry',
  reconcile: 'Reconcile sweep',
  stop: 'Stop',
};

export function triggerLabel(trigger: Trigger): string {
  const payload = trigger.payload as Record<string, unknown>;
  if (trigger.kind === 'platform_event') return String(payload.type ?? 'platform event');
  if (trigger.kind === 'button' && payload.label) return `Button: ${String(payload.label)}`;
  if (trigger.kind === 'reconcile' && payload.type) return `${String(payload.type)} (sweep)`;
  return TRIGGER_LABELS[trigger.kind] ?? trigger.kind;
}

/** Records the activity of a finished turn: what woke it, what it said, started and cost. */
export async function recordActivity(
  db: Db,
  input: { chat: Chat; turn: Turn; trigger: Trigger; summary: string; postId: string | null },
): Promise<void> {
  const resources = await db
    .selectFrom('resources')
    .select(['kind', 'platform_id', 'web_url', 'price_estimate', 'status'])
    .where('team_id', '=', input.chat.team_id)
    .where('turn_id', '=', input.turn.id)
    .orderBy('id')
    .execute();
  const estimated = resources.reduce((sum, r) => sum + Number(r.price_estimate ?? 0), 0);
  const summary = input.summary.split('\n').find((line) => line.trim().length > 0)?.trim() ?? '';
  await db
    .insertInto('activity')
    .values({
      team_id: input.chat.team_id,
      chat_id: input.chat.id,
      turn_id: input.turn.id,
      owner_user_id: input.chat.owner_user_id,
      channel_id: input.chat.channel_id,
      thread_ts: input.chat.thread_ts,
      trigger_kind: input.trigger.kind,
      trigger_label: triggerLabel(input.trigger),
      summary: summary.slice(0, 500),
      post_id: input.postId,
      resources: JSON.stringify(resources),
      agent_cost_usd: input.turn.cost_usd,
      credits_estimated: estimated.toFixed(4),
    })
    .onConflict((oc) => oc.column('turn_id').doNothing())
    .execute();
}
