// Migration 2026-12-05-007 on a database that already has turns: each gets its chat's owner, and a
// turn inserted afterwards without one gets it from its chat too (the Home tab's totals by person).
import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('turn_owners'), { max: 2 });
});
afterAll(async () => {
  await handle.close();
});

async function chatWithTurn(owner: string, n: number): Promise<string> {
  const chat = await handle.db
    .insertInto('chats')
    .values({ team_id: 'T1', channel_id: 'C1', thread_ts: `1733150000.00000${n}`, owner_user_id: owner })
    .returning('id')
    .executeTakeFirstOrThrow();
  const trigger = await handle.db
    .insertInto('triggers')
    .values({ team_id: 'T1', chat_id: chat.id, kind: 'mention', dedupe_key: `k${n}`, payload: JSON.stringify({}) })
    .returning('id')
    .executeTakeFirstOrThrow();
  await sql`insert into turns (team_id, chat_id, trigger_id, model, cost_usd) values ('T1', ${chat.id}, ${trigger.id}, 'm', 0.5)`.execute(handle.db);
  return chat.id;
}

describe('migration 2026-12-05-007 (turn owners)', () => {
  it("fills each existing turn with its chat's owner, and every later insert too", async () => {
    const migrator = new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } });
    const before = await migrator.migrateTo('2026-12-05-006-plan-update-slots');
    expect(before.error).toBeUndefined();
    await chatWithTurn('UA', 1);
    await chatWithTurn('UB', 2);
    await migrateToLatest(handle.db);
    await chatWithTurn('UA', 3);
    const rows = await sql<{ owner_user_id: string; n: string }>`select owner_user_id, count(*)::text as n from turns group by 1 order by 1`.execute(handle.db);
    expect(rows.rows).toEqual([
      { owner_user_id: 'UA', n: '2' },
      { owner_user_id: 'UB', n: '1' },
    ]);
  });
});
