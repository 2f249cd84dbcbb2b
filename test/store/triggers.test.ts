// Platform webhook ingest in batches on a real Postgres: receipts, one trigger and job per resource outcome, notified marks.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createGroupCommit } from '../../src/store/group-commit.js';
import { ingestPlatformEvents, resourceEventKey, type PlatformEventInput } from '../../src/store/resource-events.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
const db = () => handle.db;
const hex = () => randomBytes(4).toString('hex');

beforeAll(async () => {
  handle = createDb(await createTestDatabase('triggers'), { max: 6 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(() => handle.close());

/** A chat in a new team with one running resource per platform id. */
async function seedResources(kind: 'run' | 'training', count: number): Promise<{ teamId: string; chatId: string; ids: string[] }> {
  const teamId = `T${hex().toUpperCase()}`;
  const chat = await db()
    .insertInto('chats')
    .values({ team_id: teamId, channel_id: 'C1', thread_ts: `1733150000.${hex()}`, owner_user_id: 'U1' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const ids = Array.from({ length: count }, () => `${kind}_${hex()}`);
  await db()
    .insertInto('resources')
    .values(ids.map((platform_id) => ({ team_id: teamId, chat_id: chat.id, kind, platform_id, status: 'running' })))
    .execute();
  return { teamId, chatId: chat.id, ids };
}

const event = (resourceId: string, over: Partial<PlatformEventInput> = {}): PlatformEventInput => ({
  webhookId: `msg_${hex()}${hex()}`,
  type: 'run.completed',
  kind: 'run',
  resourceId,
  outcome: 'completed',
  ...over,
});

async function jobsFor(triggerIds: string[]): Promise<string[]> {
  const rows = await sql<{ trigger_id: string }>`
    select j.payload->>'triggerId' as trigger_id
    from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
    where k.identifier = 'run_turn' and j.payload->>'triggerId' = any(${triggerIds}::text[])`.execute(db());
  return rows.rows.map((r) => r.trigger_id).sort();
}

describe('ingestPlatformEvents', () => {
  it('answers each delivery of a mixed batch in order, with one trigger and one job per resource outcome', async () => {
    const { teamId, ids } = await seedResources('run', 3);
    const [a, b, c] = ids as [string, string, string];
    const first = event(a);
    const again = { ...first };
    const secondIdSameOutcome = event(a);
    const failed = event(b, { type: 'run.failed', outcome: 'failed' });
    const unknown = event('run_nobody_launched');
    const batch = [first, again, secondIdSameOutcome, failed, unknown, event(c)];

    const results = await ingestPlatformEvents(db(), batch, { maxAttempts: 5 });

    expect(results.map((r) => r.outcome)).toEqual(['enqueued', 'duplicate', 'duplicate', 'enqueued', 'unknown', 'enqueued']);
    expect(results[0]!.teamId).toBe(teamId);
    expect(results[2]!.teamId).toBe(teamId);
    const triggerIds = [results[0]!.triggerId!, results[3]!.triggerId!, results[5]!.triggerId!];
    expect(new Set(triggerIds).size).toBe(3);
    const triggers = await db().selectFrom('triggers').select(['id', 'dedupe_key', 'payload']).where('team_id', '=', teamId).orderBy('id').execute();
    expect(triggers.map((t) => t.dedupe_key).sort()).toEqual([resourceEventKey('run', a, 'completed'), resourceEventKey('run', b, 'failed'), resourceEventKey('run', c, 'completed')].sort());
    // The trigger of resource a carries the first delivery's id.
    expect(triggers.find((t) => t.dedupe_key === resourceEventKey('run', a, 'completed'))!.payload).toEqual({
      type: 'run.completed',
      resourceKind: 'run',
      resourceId: a,
      webhookId: first.webhookId,
    });
    expect(await jobsFor(triggerIds)).toEqual([...triggerIds].sort());
    const receipts = await db().selectFrom('webhook_receipts').select('webhook_id').where('webhook_id', 'in', batch.map((e) => e.webhookId)).execute();
    expect(receipts).toHaveLength(5);
    const notified = await db().selectFrom('resources').select(['platform_id', 'notified_at']).where('team_id', '=', teamId).execute();
    expect(notified.every((r) => r.notified_at !== null)).toBe(true);
  });

  it('answers duplicate to a redelivery in a later batch, and stores nothing new', async () => {
    const { teamId, ids } = await seedResources('training', 1);
    const first = event(ids[0]!, { type: 'training.completed', kind: 'training' });
    const [before] = await ingestPlatformEvents(db(), [first], { maxAttempts: 5 });
    expect(before!.outcome).toBe('enqueued');
    const [after, otherId] = await ingestPlatformEvents(db(), [{ ...first }, event(ids[0]!, { type: 'training.completed', kind: 'training' })], { maxAttempts: 5 });
    expect(after).toEqual({ outcome: 'duplicate' });
    expect(otherId!.outcome).toBe('duplicate');
    const count = await db().selectFrom('triggers').select((eb) => eb.fn.countAll<string>().as('n')).where('team_id', '=', teamId).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });

  it('through group commit, 300 concurrent deliveries (a third redelivered) give exactly one trigger and job per event', async () => {
    const { teamId, ids } = await seedResources('run', 200);
    let flushes = 0;
    const ingest = createGroupCommit({
      maxBatch: 64,
      maxInFlight: 2,
      flush: (events: PlatformEventInput[]) => {
        flushes += 1;
        return ingestPlatformEvents(db(), events, { maxAttempts: 5 });
      },
    });
    const originals = ids.map((id) => event(id));
    const deliveries = [...originals, ...originals.filter((_, i) => i % 2 === 0).map((e) => ({ ...e }))];
    const results = await Promise.all(deliveries.map((d) => ingest.submit(d)));
    const enqueued = results.filter((r) => r.outcome === 'enqueued');
    expect(enqueued).toHaveLength(200);
    expect(results.filter((r) => r.outcome === 'duplicate')).toHaveLength(100);
    expect(flushes).toBeLessThan(deliveries.length / 4);
    const triggerIds = enqueued.map((r) => r.triggerId!);
    expect(new Set(triggerIds).size).toBe(200);
    expect(await jobsFor(triggerIds)).toHaveLength(200);
    const count = await db().selectFrom('triggers').select((eb) => eb.fn.countAll<string>().as('n')).where('team_id', '=', teamId).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(200);
  });
});

describe('createGroupCommit', () => {
  it('flushes a lone item at once, batches what arrives while slots are busy, and keeps order', async () => {
    const batches: number[][] = [];
    const gates: (() => void)[] = [];
    const commit = createGroupCommit<number, string>({
      maxBatch: 3,
      maxInFlight: 1,
      flush: async (items) => {
        batches.push(items);
        await new Promise<void>((resolve) => gates.push(resolve));
        return items.map((i) => `r${i}`);
      },
    });
    const first = commit.submit(1);
    await Promise.resolve();
    await Promise.resolve();
    expect(batches).toEqual([[1]]);
    const rest = [2, 3, 4, 5].map((i) => commit.submit(i));
    gates.shift()!();
    expect(await first).toBe('r1');
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1], [2, 3, 4]]);
    gates.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1], [2, 3, 4], [5]]);
    gates.shift()!();
    expect(await Promise.all(rest)).toEqual(['r2', 'r3', 'r4', 'r5']);
  });

  it('rejects every item of a failed batch and keeps serving later ones', async () => {
    let fail = true;
    const commit = createGroupCommit<number, number>({
      maxBatch: 10,
      maxInFlight: 1,
      flush: async (items) => {
        await new Promise((r) => setTimeout(r, 5));
        if (fail) throw new Error('database unavailable');
        return items.map((i) => i * 2);
      },
    });
    const failed = [commit.submit(1), commit.submit(2)].map((p) => p.then(() => 'ok', (e: Error) => e.message));
    expect(await Promise.all(failed)).toEqual(['database unavailable', 'database unavailable']);
    fail = false;
    expect(await commit.submit(3)).toBe(6);
  });

  it('rejects a batch whose flush returns the wrong number of results', async () => {
    const commit = createGroupCommit<number, number>({ maxBatch: 10, maxInFlight: 1, flush: async () => [] });
    await expect(commit.submit(1)).rejects.toThrow('flush returned 0 results for 1 items');
  });
});
