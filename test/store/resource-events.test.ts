// A platform event becomes a trigger and its resource is marked notified: from the sweep and from a receipt that beat its launch.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { claimEarlyReceipt, enqueueSweptOutcome, ingestPlatformEvents } from '../../src/store/resource-events.js';
import { findResourceByPlatformId, upsertResource } from '../../src/store/resources.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
const db = () => handle.db;
const hex = () => randomBytes(4).toString('hex');

beforeAll(async () => {
  handle = createDb(await createTestDatabase('resevents'));
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(() => handle.close());

async function chat(teamId: string): Promise<string> {
  const row = await db().insertInto('chats').values({ team_id: teamId, channel_id: 'C1', thread_ts: `1.${hex()}`, owner_user_id: 'U1' }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

async function triggersOf(chatId: string) {
  return db().selectFrom('triggers').selectAll().where('chat_id', '=', chatId).orderBy('id').execute();
}

async function jobCount(triggerId: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    select count(*) as n from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
    where k.identifier = 'run_turn' and j.payload->>'triggerId' = ${triggerId}`.execute(db());
  return Number(rows[0]!.n);
}

describe('an event that arrived before its launch was recorded', () => {
  it('becomes the platform_event trigger of the chat that records the launch, once', async () => {
    const runId = `run_${hex()}`;
    const webhookId = `msg_${hex()}`;
    const [early] = await ingestPlatformEvents(db(), [{ webhookId, type: 'run.completed', kind: 'run', resourceId: runId, outcome: 'completed' }], { maxAttempts: 3 });
    expect(early).toEqual({ outcome: 'unknown' });
    // Nothing to claim before the launch is recorded.
    expect(await claimEarlyReceipt(db(), { teamId: 'TE', kind: 'run', platformId: runId }, { maxAttempts: 3 })).toBeUndefined();

    const chatId = await chat('TE');
    await upsertResource(db(), { teamId: 'TE', chatId, turnId: null, kind: 'run', platformId: runId, planStep: null, status: 'queued', priceEstimate: 1, webUrl: null });
    // Another workspace cannot claim it.
    expect(await claimEarlyReceipt(db(), { teamId: 'TOTHER', kind: 'run', platformId: runId }, { maxAttempts: 3 })).toBeUndefined();
    expect(await claimEarlyReceipt(db(), { teamId: 'TE', kind: 'run', platformId: runId }, { maxAttempts: 3 })).toBe('run.completed');
    const [trigger] = await triggersOf(chatId);
    expect(trigger).toMatchObject({ kind: 'platform_event', dedupe_key: `event:run:${runId}:completed`, payload: { type: 'run.completed', resourceKind: 'run', resourceId: runId, webhookId } });
    expect(await jobCount(trigger!.id)).toBe(1);
    expect((await findResourceByPlatformId(db(), 'run', runId))!.notified_at).not.toBeNull();

    // Claimed again (a resumed tool call): nothing new.
    expect(await claimEarlyReceipt(db(), { teamId: 'TE', kind: 'run', platformId: runId }, { maxAttempts: 3 })).toBeUndefined();
    expect(await triggersOf(chatId)).toHaveLength(1);
  });
});

describe("the sweep's finding", () => {
  it('is a reconcile trigger with its job and a notified resource, unless the outcome already has its trigger', async () => {
    const chatId = await chat('TS');
    const runId = `run_${hex()}`;
    const resource = await upsertResource(db(), { teamId: 'TS', chatId, turnId: null, kind: 'run', platformId: runId, planStep: null, status: 'running', priceEstimate: 1, webUrl: null });
    const target = { teamId: 'TS', id: resource.id, kind: 'run' as const, platformId: runId };
    expect(await enqueueSweptOutcome(db(), target, 'completed', { maxAttempts: 3 })).toEqual({ created: true });
    const [trigger] = await triggersOf(chatId);
    expect(trigger).toMatchObject({ kind: 'reconcile', user_id: null, payload: { type: 'run.completed', resourceKind: 'run', resourceId: runId } });
    expect(trigger!.payload).not.toHaveProperty('webhookId');
    expect(await jobCount(trigger!.id)).toBe(1);
    expect((await findResourceByPlatformId(db(), 'run', runId))!.notified_at).not.toBeNull();

    // The webhook arrives late: its outcome already has a trigger, so it is a duplicate.
    const [late] = await ingestPlatformEvents(db(), [{ webhookId: `msg_${hex()}`, type: 'run.completed', kind: 'run', resourceId: runId, outcome: 'completed' }], { maxAttempts: 3 });
    expect(late).toMatchObject({ outcome: 'duplicate' });
    expect(await enqueueSweptOutcome(db(), target, 'completed', { maxAttempts: 3 })).toEqual({ created: false });
    expect(await triggersOf(chatId)).toHaveLength(1);
    // Scoped by workspace: another team's id finds nothing.
    expect(await enqueueSweptOutcome(db(), { ...target, teamId: 'TOTHER' }, 'failed', { maxAttempts: 3 })).toEqual({ created: false });
  });
});
