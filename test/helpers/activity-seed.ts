// Inserts chats, turns, posts, resources and activity rows directly, for Activity log tests.
import type { Db } from '../../src/store/db.js';
import type { ResourceKind, TriggerKind } from '../../src/store/tables.js';

let sequence = 0;
const next = () => (sequence += 1);

export async function seedChat(
  db: Db,
  input: { teamId: string; ownerUserId: string; channelId?: string; threadTs?: string; plan?: unknown },
): Promise<string> {
  const n = next();
  const row = await db
    .insertInto('chats')
    .values({
      team_id: input.teamId,
      channel_id: input.channelId ?? 'C0LOOP',
      thread_ts: input.threadTs ?? `1733150000.${String(n).padStart(6, '0')}`,
      owner_user_id: input.ownerUserId,
      plan: input.plan === undefined ? null : JSON.stringify(input.plan),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export interface SeedResource {
  kind?: ResourceKind;
  status?: string;
  priceEstimate?: string | number | null;
  priceCharged?: string | number | null;
  webUrl?: string | null;
  notified?: boolean;
  createdAt?: Date;
}

export interface SeedTurn {
  teamId: string;
  chatId: string;
  kind?: TriggerKind;
  label?: string;
  summary?: string;
  costUsd?: string | number;
  /** undefined: a posted post with a permalink; null: no post. */
  permalink?: string | null;
  resources?: SeedResource[];
  at?: Date;
}

/** One turn with its trigger, post, resources and activity row; returns the ids. */
export async function seedTurn(db: Db, input: SeedTurn): Promise<{ turnId: string; activityId: string; postId: string | null }> {
  const n = next();
  const chat = await db.selectFrom('chats').selectAll().where('id', '=', input.chatId).executeTakeFirstOrThrow();
  const at = input.at ?? new Date();
  const trigger = await db
    .insertInto('triggers')
    .values({
      team_id: input.teamId,
      chat_id: input.chatId,
      kind: input.kind ?? 'platform_event',
      dedupe_key: `seed:${n}`,
      payload: JSON.stringify({ type: input.label ?? 'run.completed' }),
      status: 'done',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const turn = await db
    .insertInto('turns')
    .values({
      team_id: input.teamId,
      chat_id: input.chatId,
      trigger_id: trigger.id,
      status: 'completed',
      model: 'claude-test',
      cost_usd: input.costUsd ?? '0.0100000000',
      started_at: at,
      finished_at: at,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  let postId: string | null = null;
  if (input.permalink !== null) {
    const ts = `1733160000.${String(n).padStart(6, '0')}`;
    const post = await db
      .insertInto('posts')
      .values({
        team_id: input.teamId,
        chat_id: input.chatId,
        turn_id: turn.id,
        post_key: `seed:${n}`,
        channel_id: chat.channel_id,
        thread_ts: chat.thread_ts,
        payload: JSON.stringify({ text: input.summary ?? '' }),
        status: 'posted',
        slack_ts: ts,
        permalink: input.permalink ?? `https://fake.slack.test/archives/${chat.channel_id}/p${ts.replace('.', '')}?thread_ts=${chat.thread_ts}&cid=${chat.channel_id}`,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    postId = post.id;
  }
  const snapshot: unknown[] = [];
  let estimated = 0;
  for (const [i, r] of (input.resources ?? []).entries()) {
    const kind = r.kind ?? 'run';
    const platformId = `${kind}_${n}_${i}`;
    await db
      .insertInto('resources')
      .values({
        team_id: input.teamId,
        chat_id: input.chatId,
        turn_id: turn.id,
        kind,
        platform_id: platformId,
        status: r.status ?? 'running',
        price_estimate: r.priceEstimate ?? null,
        price_charged: r.priceCharged ?? null,
        web_url: r.webUrl === undefined ? `https://platform.test/${kind}s/${platformId}` : r.webUrl,
        created_at: r.createdAt ?? at,
        notified_at: r.notified ? at : null,
        plan_step: null,
        details: '{}',
      })
      .execute();
    snapshot.push({ kind, platform_id: platformId, web_url: r.webUrl ?? null, price_estimate: r.priceEstimate ?? null, status: r.status ?? 'running' });
    estimated += Number(r.priceEstimate ?? 0);
  }
  const activity = await db
    .insertInto('activity')
    .values({
      team_id: input.teamId,
      chat_id: input.chatId,
      turn_id: turn.id,
      owner_user_id: chat.owner_user_id,
      channel_id: chat.channel_id,
      thread_ts: chat.thread_ts,
      trigger_kind: input.kind ?? 'platform_event',
      trigger_label: input.label ?? 'run.completed',
      summary: input.summary ?? `Summary ${n}`,
      post_id: postId,
      resources: JSON.stringify(snapshot),
      agent_cost_usd: input.costUsd ?? '0.0100000000',
      credits_estimated: estimated.toFixed(4),
      created_at: at,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { turnId: turn.id, activityId: activity.id, postId };
}
