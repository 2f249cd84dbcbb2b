// Activity log queries on a real Postgres: paging, scopes, workspace isolation, totals and exact sums.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityCsvRows, activityTotals, listActivity, threadLink } from '../../src/store/activity-queries.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { seedChat, seedTurn } from '../helpers/activity-seed.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
const db = () => handle.db;
const newTeam = () => `T${randomBytes(4).toString('hex').toUpperCase()}`;
const WEEK_AGO = () => new Date(Date.now() - 7 * 24 * 3600 * 1000);
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

beforeAll(async () => {
  handle = createDb(await createTestDatabase('activity'), { max: 4 });
  await migrateToLatest(handle.db);
});
afterAll(() => handle.close());

describe('listActivity', () => {
  it('returns entries newest first with the post permalink, live resources and charged credits', async () => {
    const teamId = newTeam();
    const chatId = await seedChat(db(), { teamId, ownerUserId: 'U1', channelId: 'C9', threadTs: '1733150000.000100' });
    await seedTurn(db(), { teamId, chatId, kind: 'mention', label: 'Mention', summary: 'Launched run', at: minutesAgo(10), resources: [{ priceEstimate: '12.5' }] });
    const second = await seedTurn(db(), {
      teamId,
      chatId,
      label: 'run.completed',
      summary: 'Scores are in',
      costUsd: '0.0123456789',
      at: minutesAgo(5),
      resources: [
        { kind: 'dataset', status: 'ready', priceEstimate: null },
        { kind: 'training', status: 'completed', priceEstimate: '40', priceCharged: '38.25' },
        { kind: 'run', status: 'running', priceEstimate: '10.10' },
      ],
    });

    const { entries, hasMore } = await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 20 });
    expect(hasMore).toBe(false);
    expect(entries.map((e) => e.summary)).toEqual(['Scores are in', 'Launched run']);
    const [latest, first] = entries;
    expect(latest).toMatchObject({
      turnId: second.turnId,
      channelId: 'C9',
      threadTs: '1733150000.000100',
      triggerLabel: 'run.completed',
      agentCostUsd: '0.0123456789',
      creditsEstimated: '50.1000',
      creditsCharged: '38.2500',
      creditsInFlight: '10.1000',
    });
    expect(latest!.postPermalink).toMatch(/^https:\/\/fake\.slack\.test\/archives\/C9\/p/);
    expect(latest!.postTs).toMatch(/^\d+\.\d+$/);
    expect(latest!.threadPermalink).toBe('https://fake.slack.test/archives/C9/p1733150000000100');
    expect(latest!.resources.map((r) => [r.kind, r.status, r.priceEstimate, r.priceCharged])).toEqual([
      ['dataset', 'ready', null, null],
      ['training', 'completed', '40.0000', '38.2500'],
      ['run', 'running', '10.1000', null],
    ]);
    expect(latest!.resources[1]!.webUrl).toMatch(/^https:\/\/platform\.test\/trainings\//);
    expect(first).toMatchObject({ creditsCharged: null, creditsEstimated: '12.5000', creditsInFlight: '12.5000' });
  });

  it('shows the charge once the platform reports it (charged computed at read time)', async () => {
    const teamId = newTeam();
    const chatId = await seedChat(db(), { teamId, ownerUserId: 'U1' });
    const { turnId } = await seedTurn(db(), { teamId, chatId, resources: [{ priceEstimate: '20', status: 'running' }] });
    let [entry] = (await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 5 })).entries;
    expect(entry).toMatchObject({ creditsCharged: null, creditsInFlight: '20.0000' });

    await db().updateTable('resources').set({ status: 'completed', price_charged: '18.75' }).where('turn_id', '=', turnId).execute();
    [entry] = (await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 5 })).entries;
    expect(entry).toMatchObject({ creditsCharged: '18.7500', creditsInFlight: '0.0000', creditsEstimated: '20.0000' });
    expect(entry!.resources[0]).toMatchObject({ status: 'completed', priceCharged: '18.7500' });
  });

  it('pages by offset and by keyset without overlap, and says when older entries exist', async () => {
    const teamId = newTeam();
    const chatId = await seedChat(db(), { teamId, ownerUserId: 'U1' });
    for (let i = 0; i < 45; i += 1) await seedTurn(db(), { teamId, chatId, summary: `turn ${i}`, at: minutesAgo(100 - i) });

    const pages = [];
    for (let page = 0; page < 3; page += 1) {
      pages.push(await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 20, offset: page * 20 }));
    }
    expect(pages.map((p) => [p.entries.length, p.hasMore])).toEqual([
      [20, true],
      [20, true],
      [5, false],
    ]);
    const summaries = pages.flatMap((p) => p.entries.map((e) => e.summary));
    expect(summaries).toEqual(Array.from({ length: 45 }, (_, i) => `turn ${44 - i}`));

    const firstPage = pages[0]!.entries;
    const keyset = await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 20, beforeId: firstPage[19]!.id });
    expect(keyset.entries.map((e) => e.summary)).toEqual(pages[1]!.entries.map((e) => e.summary));

    const beyond = await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 20, offset: 1000 });
    expect(beyond).toEqual({ entries: [], hasMore: false });
  });

  it('shows the viewer only their own chats under mine, the workspace under team, and never another workspace', async () => {
    const teamA = newTeam();
    const teamB = newTeam();
    const mineChat = await seedChat(db(), { teamId: teamA, ownerUserId: 'U1', channelId: 'CSHARED' });
    const theirChat = await seedChat(db(), { teamId: teamA, ownerUserId: 'U2', channelId: 'CSHARED' });
    // Same user id and channel id in another workspace: must never leak.
    const otherWorkspace = await seedChat(db(), { teamId: teamB, ownerUserId: 'U1', channelId: 'CSHARED' });
    await seedTurn(db(), { teamId: teamA, chatId: mineChat, summary: 'A mine', resources: [{ priceEstimate: 1 }] });
    await seedTurn(db(), { teamId: teamA, chatId: theirChat, summary: 'A theirs', resources: [{ priceEstimate: 2 }] });
    await seedTurn(db(), { teamId: teamB, chatId: otherWorkspace, summary: 'B secret', costUsd: 5, resources: [{ priceEstimate: 100 }] });

    const list = async (teamId: string, scope: 'mine' | 'team') =>
      (await listActivity(db(), { teamId, viewerId: 'U1', scope, limit: 20 })).entries.map((e) => e.summary).sort();
    expect(await list(teamA, 'mine')).toEqual(['A mine']);
    expect(await list(teamA, 'team')).toEqual(['A mine', 'A theirs']);
    expect(await list(teamB, 'team')).toEqual(['B secret']);

    const since = WEEK_AGO();
    const mine = await activityTotals(db(), { teamId: teamA, viewerId: 'U1', scope: 'mine', since });
    const team = await activityTotals(db(), { teamId: teamA, viewerId: 'U1', scope: 'team', since });
    expect(mine).toMatchObject({ creditsSpent: '1.0000', turns: 1, loopsInProgress: 1 });
    expect(team).toMatchObject({ creditsSpent: '3.0000', turns: 2, loopsInProgress: 2, agentCostUsd: '0.0200000000' });

    const csv = await activityCsvRows(db(), { teamId: teamA, viewerId: 'U1', scope: 'team' });
    expect(csv.rows.map((r) => r.summary).sort()).toEqual(['A mine', 'A theirs']);
  });

  it('links the thread from the chat or workspace permalink when the turn has no post, or not at all', async () => {
    const teamId = newTeam();
    expect((await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 5 })).entries).toEqual([]);
    const lonely = await seedChat(db(), { teamId, ownerUserId: 'U1', channelId: 'C1', threadTs: '1733150001.000001' });
    await seedTurn(db(), { teamId, chatId: lonely, permalink: null });
    let [entry] = (await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 5 })).entries;
    expect(entry).toMatchObject({ postPermalink: null, postTs: null, threadPermalink: null });

    const other = await seedChat(db(), { teamId, ownerUserId: 'U1', channelId: 'C2' });
    await seedTurn(db(), { teamId, chatId: other, permalink: 'https://acme.slack.com/archives/C2/p1733160000000001' });
    entry = (await listActivity(db(), { teamId, viewerId: 'U1', scope: 'mine', limit: 5 })).entries.find((e) => e.chatId === lonely);
    expect(entry!.threadPermalink).toBe('https://acme.slack.com/archives/C1/p1733150001000001');
    expect(threadLink('not a url', 'C1', '1.2')).toBeNull();
  });
});

describe('activityTotals', () => {
  it('sums credits and agent cost as exact numerics (0.1 + 0.2 = 0.3)', async () => {
    const teamId = newTeam();
    const chatId = await seedChat(db(), { teamId, ownerUserId: 'U1' });
    await seedTurn(db(), { teamId, chatId, costUsd: '0.1', resources: [{ priceCharged: '0.1', priceEstimate: '5', status: 'completed', notified: true }] });
    await seedTurn(db(), { teamId, chatId, costUsd: '0.2', resources: [{ priceCharged: '0.2', status: 'completed', notified: true }] });
    const totals = await activityTotals(db(), { teamId, viewerId: 'U1', scope: 'mine', since: WEEK_AGO() });
    expect(totals.creditsSpent).toBe('0.3000');
    expect(totals.agentCostUsd).toBe('0.3000000000');
    expect(totals.creditsInFlight).toBe('0.0000');
    expect(totals.loopsInProgress).toBe(0);
  });

  it('counts charged credits, estimates for in-flight work, nothing for failed uncharged work, only this week', async () => {
    const teamId = newTeam();
    const chatId = await seedChat(db(), { teamId, ownerUserId: 'U1' });
    const old = new Date(Date.now() - 8 * 24 * 3600 * 1000);
    await seedTurn(db(), {
      teamId,
      chatId,
      resources: [
        { priceEstimate: '10', priceCharged: '9.5', status: 'completed', notified: true },
        { priceEstimate: '3.25', status: 'running' },
        { priceEstimate: '7', status: 'failed', notified: true },
        { priceEstimate: '4', priceCharged: '1.5', status: 'failed', notified: true },
        { priceEstimate: '100', priceCharged: '100', status: 'completed', notified: true, createdAt: old },
      ],
    });
    await seedTurn(db(), { teamId, chatId, costUsd: '99', at: old });
    const totals = await activityTotals(db(), { teamId, viewerId: 'U1', scope: 'mine', since: WEEK_AGO() });
    expect(totals).toEqual({
      loopsInProgress: 1,
      creditsSpent: '14.2500',
      creditsInFlight: '3.2500',
      agentCostUsd: '0.0100000000',
      turns: 1,
    });
  });

  it('counts loops in progress: unreported runs or trainings, launched or pending plan steps, not stalled or finished ones', async () => {
    const teamId = newTeam();
    const plan = (...statuses: string[]) => ({ steps: statuses.map((status, i) => ({ kind: `step${i}`, status, attempt: 1 })) });
    const inProgress = [
      await seedChat(db(), { teamId, ownerUserId: 'U1', plan: plan('completed', 'launched', 'pending') }),
      await seedChat(db(), { teamId, ownerUserId: 'U1', plan: plan('pending', 'pending') }),
      await seedChat(db(), { teamId, ownerUserId: 'U2', plan: plan('completed', 'launched') }),
    ];
    const unreportedTraining = await seedChat(db(), { teamId, ownerUserId: 'U1' });
    await seedTurn(db(), { teamId, chatId: unreportedTraining, resources: [{ kind: 'training', status: 'completed', notified: false }] });
    inProgress.push(unreportedTraining);

    await seedChat(db(), { teamId, ownerUserId: 'U1', plan: plan('completed', 'completed') });
    await seedChat(db(), { teamId, ownerUserId: 'U1', plan: plan('completed', 'failed', 'pending') });
    await seedChat(db(), { teamId, ownerUserId: 'U1', plan: { not: 'a plan' } });
    await seedChat(db(), { teamId, ownerUserId: 'U1', plan: { steps: 'garbage' } });
    const reported = await seedChat(db(), { teamId, ownerUserId: 'U1' });
    await seedTurn(db(), { teamId, chatId: reported, resources: [{ kind: 'run', status: 'completed', notified: true }, { kind: 'dataset', status: 'ready' }] });

    const since = WEEK_AGO();
    expect((await activityTotals(db(), { teamId, viewerId: 'U1', scope: 'mine', since })).loopsInProgress).toBe(3);
    expect((await activityTotals(db(), { teamId, viewerId: 'U1', scope: 'team', since })).loopsInProgress).toBe(4);
    expect((await activityTotals(db(), { teamId: newTeam(), viewerId: 'U1', scope: 'team', since })).loopsInProgress).toBe(0);
  });
});

describe('activityCsvRows', () => {
  it('reads every entry in keyset batches, newest first, and stops at max', async () => {
    const teamId = newTeam();
    const chatId = await seedChat(db(), { teamId, ownerUserId: 'U1' });
    for (let i = 0; i < 7; i += 1) await seedTurn(db(), { teamId, chatId, summary: `row ${i}`, at: minutesAgo(50 - i) });
    const all = await activityCsvRows(db(), { teamId, viewerId: 'U1', scope: 'mine', batchSize: 3 });
    expect(all.truncated).toBe(false);
    expect(all.rows.map((r) => r.summary)).toEqual(['row 6', 'row 5', 'row 4', 'row 3', 'row 2', 'row 1', 'row 0']);
    const capped = await activityCsvRows(db(), { teamId, viewerId: 'U1', scope: 'mine', batchSize: 3, max: 5 });
    expect(capped.truncated).toBe(true);
    expect(capped.rows.map((r) => r.summary)).toEqual(['row 6', 'row 5', 'row 4', 'row 3', 'row 2']);
    const exact = await activityCsvRows(db(), { teamId, viewerId: 'U1', scope: 'mine', batchSize: 3, max: 7 });
    expect(exact).toMatchObject({ truncated: false });
    expect(exact.rows).toHaveLength(7);
  });
});
