// Spending per person and per workspace over the cap period, from the recorded launches, and the guard's caps.
import { Migrator, sql } from 'kysely';
import { migrations } from '../../migrations/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeLaunch, type LaunchIntent } from '../../src/agent/spend-guard.js';
import type { ToolContext } from '../../src/agent/tools/tool.js';
import { loadConfig } from '../../src/config.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { spendingInPeriod } from '../../src/store/spending.js';
import { recordLaunch } from '../../src/agent/tools/launch-record.js';
import { markAuthorizationRecorded } from '../../src/store/launch-authorizations.js';
import { pino } from 'pino';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import type { Chat, Trigger } from '../../src/store/tables.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
const db = () => handle.db;
beforeAll(async () => {
  handle = createDb(await createTestDatabase('spending'));
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(() => handle.close());

async function chat(teamId: string, owner: string, ts: string): Promise<Chat> {
  return db().insertInto('chats').values({ team_id: teamId, channel_id: 'C1', thread_ts: ts, owner_user_id: owner }).returningAll().executeTakeFirstOrThrow();
}

async function launch(c: Chat, id: string, credits: { estimate: number; charged?: number }, status = 'running', createdAt?: string) {
  await db()
    .insertInto('resources')
    .values({
      team_id: c.team_id,
      chat_id: c.id,
      kind: 'run',
      platform_id: id,
      status,
      price_estimate: credits.estimate,
      price_charged: credits.charged ?? null,
      ...(createdAt ? { created_at: createdAt } : {}),
    })
    .execute();
}

describe('spending in the cap period', () => {
  it('adds up a person\'s threads and the workspace, without failed launches or launches before the period, with launches allowed but not recorded yet', async () => {
    const a1 = await chat('TS1', 'UANN', '1.1');
    const a2 = await chat('TS1', 'UANN', '1.2');
    const b = await chat('TS1', 'UBOB', '1.3');
    const other = await chat('TS2', 'UANN', '1.4');
    await launch(a1, 'r1', { estimate: 10, charged: 12 }, 'completed');
    await launch(a2, 'r2', { estimate: 30 });
    await launch(a2, 'r3', { estimate: 500 }, 'failed');
    await launch(a2, 'r4', { estimate: 700 }, 'completed', new Date(Date.now() - 8 * 86_400_000).toISOString());
    await launch(b, 'r5', { estimate: 100 });
    await launch(other, 'r6', { estimate: 1000 });
    // An allowed launch whose platform call is still under way (no resource yet).
    const turn = await db().insertInto('triggers').values({ team_id: 'TS1', chat_id: a1.id, kind: 'mention', dedupe_key: 'm1', user_id: 'UANN', payload: '{}' }).returning('id').executeTakeFirstOrThrow();
    const t = await db().insertInto('turns').values({ team_id: 'TS1', chat_id: a1.id, trigger_id: turn.id, model: 'm', cost_usd: 0 }).returning('id').executeTakeFirstOrThrow();
    await db().insertInto('launch_authorizations').values({ team_id: 'TS1', turn_id: t.id, tool_use_id: 'tu1', idempotency_key: 'k', plan_step: null, credits: 5, spender_user_id: 'UANN', chat_id: a1.id }).execute();

    expect(await spendingInPeriod(db(), 'TS1', 'UANN', 7)).toEqual({ person: 12 + 30 + 5, workspace: 12 + 30 + 5 + 100 });
    expect(await spendingInPeriod(db(), 'TS1', 'UBOB', 7)).toEqual({ person: 100, workspace: 147 });
    expect((await spendingInPeriod(db(), 'TS1', 'UANN', 30)).person).toBe(747);
    // Once its resource is recorded (and the decision marked, as recordLaunch does), it is not counted twice.
    await db().insertInto('resources').values({ team_id: 'TS1', chat_id: a1.id, turn_id: t.id, kind: 'run', platform_id: 'r7', status: 'running', price_estimate: 5, details: JSON.stringify({ toolUseId: 'tu1' }) }).execute();
    await markAuthorizationRecorded(db(), { teamId: 'TS1', turnId: t.id, toolUseId: 'tu1' });
    expect((await spendingInPeriod(db(), 'TS1', 'UANN', 7)).person).toBe(47);
  });

  it('refuses a launch above the workspace cap with an Approve, and lets parallel launches fill a cap only once', async () => {
    const config = loadConfig({ SLACK_BOT_TOKEN: 'x', SLACK_SIGNING_SECRET: 's', ANTHROPIC_API_KEY: 'k', SPEND_CAP_PERSON: '1000', SPEND_CAP_WORKSPACE: '50' });
    const owner = await chat('TS3', 'UCAT', '3.1');
    const intent: LaunchIntent = { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' };
    const ctxFor = async (i: number): Promise<ToolContext> => {
      const trigger = await db().insertInto('triggers').values({ team_id: 'TS3', chat_id: owner.id, kind: 'mention', dedupe_key: `m${i}`, user_id: 'UCAT', payload: '{}' }).returningAll().executeTakeFirstOrThrow();
      const turn = await db().insertInto('turns').values({ team_id: 'TS3', chat_id: owner.id, trigger_id: trigger.id, model: 'm', cost_usd: 0 }).returningAll().executeTakeFirstOrThrow();
      return { db: db(), config, chat: owner, trigger: trigger as Trigger, turn, toolUseId: `tu${i}`, authority: 'person' } as unknown as ToolContext;
    };
    const contexts = await Promise.all(Array.from({ length: 8 }, (_, i) => ctxFor(i)));
    const decisions = await Promise.all(contexts.map((c, i) => authorizeLaunch(c, intent, { credits: 10, availableCredits: 10_000 }, { toolUseId: `tu${i}` })));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    const refused = decisions.find((d) => !d.allowed)!;
    expect(refused).toMatchObject({ allowed: false, reason: expect.stringMatching(/this workspace has spent 50\.00 of its 50-credit cap for the last 7 days/), approval: { intent, credits: 10 } });
    const counted = await sql<{ n: string }>`select count(*) as n from launch_authorizations where team_id = 'TS3'`.execute(db());
    expect(Number(counted.rows[0]!.n)).toBe(5);
  });

  it('stops counting a decision once its launch is recorded (recordLaunch marks it in the same transaction)', async () => {
    const config = loadConfig({ SLACK_BOT_TOKEN: 'x', SLACK_SIGNING_SECRET: 's', ANTHROPIC_API_KEY: 'k', SPEND_CAP_PERSON: '1000', SPEND_CAP_WORKSPACE: '1000' });
    const owner = await chat('TS4', 'UDAN', '4.1');
    const trigger = await db().insertInto('triggers').values({ team_id: 'TS4', chat_id: owner.id, kind: 'mention', dedupe_key: 'm1', user_id: 'UDAN', payload: '{}' }).returningAll().executeTakeFirstOrThrow();
    const turn = await db().insertInto('turns').values({ team_id: 'TS4', chat_id: owner.id, trigger_id: trigger.id, model: 'm', cost_usd: 0 }).returningAll().executeTakeFirstOrThrow();
    const ctx = { db: db(), config, chat: owner, trigger: trigger as Trigger, turn, toolUseId: 'tu1', authority: 'person', logger: pino({ level: 'silent' }) } as unknown as ToolContext;
    const intent: LaunchIntent = { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' };
    expect(await authorizeLaunch(ctx, intent, { credits: 9, availableCredits: 10_000 }, { toolUseId: 'tu1' })).toMatchObject({ allowed: true });
    expect(await spendingInPeriod(db(), 'TS4', 'UDAN', 7)).toEqual({ person: 9, workspace: 9 });

    await recordLaunch(ctx, { kind: 'run', platformId: 'run_ts4', planStep: null, status: 'running', priceEstimate: 4, webUrl: null });
    const row = await db().selectFrom('launch_authorizations').select('recorded_at').where('team_id', '=', 'TS4').executeTakeFirstOrThrow();
    expect(row.recorded_at).toBeInstanceOf(Date);
    expect(await spendingInPeriod(db(), 'TS4', 'UDAN', 7)).toEqual({ person: 4, workspace: 4 });
  });
});

describe('migration 2026-12-08-002 (decisions marked recorded)', () => {
  it('marks the decisions whose launch is already recorded, and leaves the ones still in flight', async () => {
    const fresh = createDb(await createTestDatabase('spending_migration'), { max: 2 });
    try {
      const migrator = new Migrator({ db: fresh.db, provider: { getMigrations: async () => migrations } });
      expect((await migrator.migrateTo('2026-12-08-001-resources-tool-call')).error).toBeUndefined();
      const c = await fresh.db.insertInto('chats').values({ team_id: 'TM', channel_id: 'C1', thread_ts: '9.1', owner_user_id: 'UM' }).returning('id').executeTakeFirstOrThrow();
      const tr = await fresh.db.insertInto('triggers').values({ team_id: 'TM', chat_id: c.id, kind: 'mention', dedupe_key: 'm', payload: '{}' }).returning('id').executeTakeFirstOrThrow();
      const turn = await fresh.db.insertInto('turns').values({ team_id: 'TM', chat_id: c.id, trigger_id: tr.id, model: 'm', cost_usd: 0 }).returning('id').executeTakeFirstOrThrow();
      for (const tool of ['recorded', 'in_flight']) {
        await sql`insert into launch_authorizations (team_id, turn_id, tool_use_id, idempotency_key, credits, spender_user_id, chat_id) values ('TM', ${turn.id}, ${tool}, ${tool}, 3, 'UM', ${c.id})`.execute(fresh.db);
      }
      await fresh.db.insertInto('resources').values({ team_id: 'TM', chat_id: c.id, turn_id: turn.id, kind: 'run', platform_id: 'run_m', status: 'running', price_estimate: 3, details: JSON.stringify({ toolUseId: 'recorded' }) }).execute();
      await migrateToLatest(fresh.db);
      const rows = await fresh.db.selectFrom('launch_authorizations').select(['tool_use_id', 'recorded_at']).orderBy('tool_use_id').execute();
      expect(rows.map((r) => [r.tool_use_id, r.recorded_at instanceof Date])).toEqual([['in_flight', false], ['recorded', true]]);
      expect(await spendingInPeriod(fresh.db, 'TM', 'UM', 7)).toEqual({ person: 6, workspace: 6 });
    } finally {
      await fresh.close();
    }
  });
});
