// Reads the Activity log for the App Home tab and its CSV export; every query is scoped by workspace.
import { sql, type SqlBool } from 'kysely';
import type { Db } from './db.js';
import type { TriggerKind } from './tables.js';
import { toFeedbackSummary, type VerdictFeedbackSummary } from './verdict-feedback.js';

/** `mine`: chats the viewer owns; `team`: every chat of the viewer's workspace. */
export type ActivityScope = 'mine' | 'team';

export interface ActivityQuery {
  teamId: string;
  viewerId: string;
  scope: ActivityScope;
}

/** A platform resource a turn started, as it stands now (status and charge are live, not the snapshot). */
export interface ActivityResource {
  kind: string;
  platformId: string;
  webUrl: string | null;
  status: string;
  /** numeric as a decimal string */
  priceEstimate: string | null;
  priceCharged: string | null;
}

export interface ActivityEntry {
  id: string;
  turnId: string;
  chatId: string;
  createdAt: Date;
  ownerUserId: string;
  channelId: string;
  threadTs: string;
  triggerKind: TriggerKind;
  triggerLabel: string;
  summary: string;
  /** Permalink and ts of the message the agent wrote in this turn, once Slack has it. */
  postPermalink: string | null;
  postTs: string | null;
  /** Link to the thread's root message, or null when no permalink of the workspace is known yet. */
  threadPermalink: string | null;
  resources: ActivityResource[];
  /** Decimal strings, summed in SQL. */
  agentCostUsd: string;
  creditsEstimated: string;
  /** Sum of the charges of the resources the turn started; null while none has been charged. */
  creditsCharged: string | null;
  /** Estimates of the started resources not charged yet and not failed. */
  creditsInFlight: string;
  /** Votes on the verdict this turn wrote (feedback buttons); null when it wrote none or nobody voted. */
  feedback?: VerdictFeedbackSummary | null;
}

export interface ActivityTotals {
  /** See {@link activityTotals} for the definition. */
  loopsInProgress: number;
  /** Charged credits, or the estimate for work not charged yet, of resources created since `since`. */
  creditsSpent: string;
  /** The part of `creditsSpent` that is still an estimate. */
  creditsInFlight: string;
  agentCostUsd: string;
  turns: number;
}

interface ActivityRow {
  id: string;
  turn_id: string;
  chat_id: string;
  created_at: Date;
  owner_user_id: string;
  channel_id: string;
  thread_ts: string;
  trigger_kind: TriggerKind;
  trigger_label: string;
  summary: string;
  snapshot: unknown;
  agent_cost_usd: string;
  credits_estimated: string;
  post_permalink: string | null;
  post_ts: string | null;
  chat_permalink: string | null;
  live_resources: unknown;
  credits_charged: string | null;
  credits_in_flight: string;
  feedback_votes: unknown;
}

async function queryActivity(
  db: Db,
  query: ActivityQuery,
  page: { limit: number; offset?: number; beforeId?: string },
): Promise<ActivityRow[]> {
  let q = db
    .selectFrom('activity as a')
    .leftJoin('posts as p', (join) => join.onRef('p.id', '=', 'a.post_id').onRef('p.team_id', '=', 'a.team_id'))
    .select([
      'a.id',
      'a.turn_id',
      'a.chat_id',
      'a.created_at',
      'a.owner_user_id',
      'a.channel_id',
      'a.thread_ts',
      'a.trigger_kind',
      'a.trigger_label',
      'a.summary',
      'a.resources as snapshot',
      sql<string>`a.agent_cost_usd::text`.as('agent_cost_usd'),
      sql<string>`a.credits_estimated::text`.as('credits_estimated'),
      'p.permalink as post_permalink',
      'p.slack_ts as post_ts',
      sql<string | null>`(
        select cp.permalink from posts cp
        where cp.team_id = a.team_id and cp.chat_id = a.chat_id and cp.permalink is not null
        order by cp.id limit 1)`.as('chat_permalink'),
      sql<unknown>`r.resources`.as('live_resources'),
      sql<string | null>`r.charged::text`.as('credits_charged'),
      sql<string>`coalesce(r.in_flight, 0)::numeric(20,4)::text`.as('credits_in_flight'),
      sql<unknown>`(
        select jsonb_agg(jsonb_build_object('userId', f.user_id, 'vote', f.vote) order by f.created_at, f.id)
        from verdict_feedback f where f.team_id = a.team_id and f.turn_id = a.turn_id)`.as('feedback_votes'),
    ])
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('resources as res')
          .select([
            sql<unknown>`jsonb_agg(jsonb_build_object(
              'kind', res.kind, 'platformId', res.platform_id, 'webUrl', res.web_url, 'status', res.status,
              'priceEstimate', res.price_estimate::text, 'priceCharged', res.price_charged::text) order by res.id)`.as('resources'),
            sql<string | null>`sum(res.price_charged)`.as('charged'),
            sql<string | null>`sum(res.price_estimate) filter (where res.price_charged is null and res.status <> 'failed')`.as(
              'in_flight',
            ),
          ])
          .whereRef('res.team_id', '=', 'a.team_id')
          .whereRef('res.chat_id', '=', 'a.chat_id')
          .whereRef('res.turn_id', '=', 'a.turn_id')
          .as('r'),
      (join) => join.onTrue(),
    )
    .where('a.team_id', '=', query.teamId);
  if (query.scope === 'mine') q = q.where('a.owner_user_id', '=', query.viewerId);
  if (page.beforeId !== undefined) q = q.where('a.id', '<', page.beforeId);
  q = q.orderBy('a.id', 'desc').limit(page.limit);
  if (page.offset) q = q.offset(page.offset);
  return (await q.execute()) as ActivityRow[];
}

function toResources(value: unknown): ActivityResource[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item): ActivityResource[] => {
    if (typeof item !== 'object' || item === null) return [];
    const r = item as Record<string, unknown>;
    const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
    return [
      {
        kind: String(r.kind ?? 'resource'),
        platformId: String(r.platformId ?? r.platform_id ?? ''),
        webUrl: text(r.webUrl ?? r.web_url),
        status: String(r.status ?? 'unknown'),
        priceEstimate: text(r.priceEstimate ?? r.price_estimate),
        priceCharged: text(r.priceCharged ?? r.price_charged),
      },
    ];
  });
}

/** Link to a thread's root, on the workspace host of a permalink Slack gave for the same workspace. */
export function threadLink(knownPermalink: string | null, channelId: string, threadTs: string): string | null {
  if (!knownPermalink) return null;
  try {
    const origin = new URL(knownPermalink).origin;
    return `${origin}/archives/${channelId}/p${threadTs.replace('.', '')}`;
  } catch {
    return null;
  }
}

async function workspacePermalink(db: Db, teamId: string): Promise<string | null> {
  const row = await db
    .selectFrom('posts')
    .select('permalink')
    .where('team_id', '=', teamId)
    .where('permalink', 'is not', null)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.permalink ?? null;
}

async function toEntries(db: Db, teamId: string, rows: ActivityRow[]): Promise<ActivityEntry[]> {
  const needsWorkspaceLink = rows.some((row) => !row.post_permalink && !row.chat_permalink);
  const fallback = needsWorkspaceLink ? await workspacePermalink(db, teamId) : null;
  return rows.map((row) => {
    const live = toResources(row.live_resources);
    return {
      id: row.id,
      turnId: row.turn_id,
      chatId: row.chat_id,
      createdAt: row.created_at,
      ownerUserId: row.owner_user_id,
      channelId: row.channel_id,
      threadTs: row.thread_ts,
      triggerKind: row.trigger_kind,
      triggerLabel: row.trigger_label,
      summary: row.summary,
      postPermalink: row.post_permalink,
      postTs: row.post_ts,
      threadPermalink: threadLink(row.post_permalink ?? row.chat_permalink ?? fallback, row.channel_id, row.thread_ts),
      resources: live.length > 0 ? live : toResources(row.snapshot),
      agentCostUsd: row.agent_cost_usd,
      creditsEstimated: row.credits_estimated,
      creditsCharged: row.credits_charged,
      creditsInFlight: row.credits_in_flight,
      feedback: toFeedbackSummary(row.feedback_votes),
    };
  });
}

/**
 * One page of the Activity log, newest first. Page by `offset` (what the Home tab's buttons carry)
 * or by `beforeId` (stable while new turns arrive). `hasMore` says whether older entries exist.
 */
export async function listActivity(
  db: Db,
  query: ActivityQuery & { limit: number; offset?: number; beforeId?: string },
): Promise<{ entries: ActivityEntry[]; hasMore: boolean }> {
  const limit = Math.max(1, Math.floor(query.limit));
  const offset = Math.max(0, Math.floor(query.offset ?? 0));
  const rows = await queryActivity(db, query, {
    limit: limit + 1,
    ...(offset > 0 ? { offset } : {}),
    ...(query.beforeId !== undefined ? { beforeId: query.beforeId } : {}),
  });
  const hasMore = rows.length > limit;
  return { entries: await toEntries(db, query.teamId, rows.slice(0, limit)), hasMore };
}

/**
 * Totals for the Home tab header, over the viewer's chats (`mine`) or the workspace's (`team`).
 *
 * A loop is in progress when its chat has a run or training the bot has not reported yet
 * (`notified_at` is null: the platform is working, or its result is on its way into the thread),
 * or when its agreed plan has a step launched, or steps still pending and none failed (a failed
 * step stalls the loop until a person acts). Credits count resources created since `since`: the
 * charge, or the estimate while not charged (nothing for a failed, uncharged one). Agent cost
 * sums the turns started since `since`. All sums are numeric in SQL, returned as decimal strings.
 */
export async function activityTotals(db: Db, query: ActivityQuery & { since: Date }): Promise<ActivityTotals> {
  const mine = query.scope === 'mine';
  let loops = db
    .selectFrom('chats as c')
    .select(sql<string>`count(*)`.as('n'))
    .where('c.team_id', '=', query.teamId)
    .where(
      sql<SqlBool>`(
        exists (
          select 1 from resources r
          where r.team_id = c.team_id and r.chat_id = c.id and r.kind in ('run', 'training') and r.notified_at is null)
        or coalesce(jsonb_path_exists(c.plan, '$.steps[*] ? (@.status == "launched")'), false)
        or (coalesce(jsonb_path_exists(c.plan, '$.steps[*] ? (@.status == "pending")'), false)
            and not coalesce(jsonb_path_exists(c.plan, '$.steps[*] ? (@.status == "failed")'), false))
      )`,
    );
  if (mine) loops = loops.where('c.owner_user_id', '=', query.viewerId);

  let credits = db
    .selectFrom('resources as r')
    .innerJoin('chats as c', (join) => join.onRef('c.id', '=', 'r.chat_id').onRef('c.team_id', '=', 'r.team_id'))
    .select([
      sql<string>`coalesce(sum(coalesce(r.price_charged, case when r.status = 'failed' then 0 else r.price_estimate end, 0)), 0)::numeric(20,4)::text`.as(
        'spent',
      ),
      sql<string>`coalesce(sum(r.price_estimate) filter (where r.price_charged is null and r.status <> 'failed'), 0)::numeric(20,4)::text`.as(
        'in_flight',
      ),
    ])
    .where('r.team_id', '=', query.teamId)
    .where('r.created_at', '>=', query.since);
  if (mine) credits = credits.where('c.owner_user_id', '=', query.viewerId);

  // One table, by index: the turn carries its chat's owner.
  let turns = db
    .selectFrom('turns as t')
    .select([sql<string>`coalesce(sum(t.cost_usd), 0)::numeric(24,10)::text`.as('usd'), sql<string>`count(*)`.as('n')])
    .where('t.team_id', '=', query.teamId)
    .where('t.started_at', '>=', query.since);
  if (mine) turns = turns.where('t.owner_user_id', '=', query.viewerId);

  const [loopRow, creditRow, turnRow] = await Promise.all([
    loops.executeTakeFirstOrThrow(),
    credits.executeTakeFirstOrThrow(),
    turns.executeTakeFirstOrThrow(),
  ]);
  return {
    loopsInProgress: Number(loopRow.n),
    creditsSpent: creditRow.spent,
    creditsInFlight: creditRow.in_flight,
    agentCostUsd: turnRow.usd,
    turns: Number(turnRow.n),
  };
}

export type ActivityCsvRow = ActivityEntry;

/**
 * Every entry of the scope for the CSV export, newest first, read in keyset batches. Stops at
 * `max` rows and says so with `truncated`.
 */
export async function activityCsvRows(
  db: Db,
  query: ActivityQuery & { max?: number; batchSize?: number },
): Promise<{ rows: ActivityCsvRow[]; truncated: boolean }> {
  const max = Math.max(1, Math.floor(query.max ?? 20_000));
  const batchSize = Math.max(1, Math.floor(query.batchSize ?? 500));
  const rows: ActivityCsvRow[] = [];
  let beforeId: string | undefined;
  for (;;) {
    const page = await listActivity(db, {
      teamId: query.teamId,
      viewerId: query.viewerId,
      scope: query.scope,
      limit: Math.min(batchSize, max - rows.length),
      ...(beforeId !== undefined ? { beforeId } : {}),
    });
    rows.push(...page.entries);
    if (!page.hasMore) return { rows, truncated: false };
    if (rows.length >= max) return { rows, truncated: true };
    beforeId = page.entries[page.entries.length - 1]!.id;
  }
}
