// A turn's first read: the trigger and its chat in one round trip, every column as the table holds it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getChat, getTriggerWithChat } from '../../src/store/chats.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('chats'), { max: 2 });
  await migrateToLatest(handle.db);
});
afterAll(() => handle.close());

describe('getTriggerWithChat', () => {
  it('returns the trigger as stored and its chat exactly as getChat reads it, stop and decision included', async () => {
    const db = handle.db;
    const chat = await db
      .insertInto('chats')
      .values({ team_id: 'T1', channel_id: 'C1', thread_ts: '1733150000.000100', owner_user_id: 'U1', plan: JSON.stringify({ steps: [{ kind: 'baseline' }] }) })
      .returning('id')
      .executeTakeFirstOrThrow();
    const trigger = await db
      .insertInto('triggers')
      .values({ team_id: 'T1', chat_id: chat.id, kind: 'mention', dedupe_key: 'ev1', user_id: 'U1', payload: JSON.stringify({ text: 'hi' }) })
      .returningAll()
      .executeTakeFirstOrThrow();
    await db
      .updateTable('chats')
      .set({ decision: JSON.stringify({ action: 'keep', by: 'U1' }), stopped_at: new Date('2026-12-08T01:00:00Z'), stopped_by: 'U2', stop_trigger_id: trigger.id })
      .where('id', '=', chat.id)
      .execute();

    const found = await getTriggerWithChat(db, trigger.id);
    expect(found?.trigger).toEqual(trigger);
    expect(found?.chat).toEqual(await getChat(db, 'T1', chat.id));
    expect(found?.chat).toMatchObject({ stopped_by: 'U2', stop_trigger_id: trigger.id, decision: { action: 'keep', by: 'U1' }, plan: { steps: [{ kind: 'baseline' }] } });
    expect(found?.chat?.stopped_at).toEqual(new Date('2026-12-08T01:00:00Z'));
  });

  it('is undefined for a trigger that does not exist', async () => {
    expect(await getTriggerWithChat(handle.db, '987654321')).toBeUndefined();
  });
});
