// Recording a resource is idempotent in one statement: a second record returns the row as it stands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { upsertResource } from '../../src/store/resources.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('resources'), { max: 2 });
  await migrateToLatest(handle.db);
});
afterAll(() => handle.close());

describe('upsertResource', () => {
  it('records once: again it returns the stored row unchanged, and never one of another workspace', async () => {
    const db = handle.db;
    const chat = await db.insertInto('chats').values({ team_id: 'T1', channel_id: 'C1', thread_ts: '1.1', owner_user_id: 'U1' }).returning('id').executeTakeFirstOrThrow();
    const input = { teamId: 'T1', chatId: chat.id, turnId: null, kind: 'run' as const, platformId: 'run_1', planStep: 'baseline', status: 'queued', priceEstimate: 2.5, webUrl: null };
    const first = await upsertResource(db, input);
    expect(first).toMatchObject({ team_id: 'T1', platform_id: 'run_1', status: 'queued', plan_step: 'baseline' });
    await db.updateTable('resources').set({ status: 'completed' }).where('id', '=', first.id).execute();
    const again = await upsertResource(db, { ...input, status: 'running', priceEstimate: 9 });
    expect(again).toMatchObject({ id: first.id, status: 'completed', price_estimate: first.price_estimate, updated_at: first.updated_at });
    await expect(upsertResource(db, { ...input, teamId: 'T2' })).rejects.toThrow();
  });
});
