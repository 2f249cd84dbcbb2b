import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { createDb, migrateToLatest } from '../../src/store/db.js';
import { createTestDatabase } from '../kit/database.js';

describe('migrations', () => {
  it('apply once when several replicas start together', async () => {
    const url = await createTestDatabase('mig');
    const replicas = [createDb(url, { max: 2 }), createDb(url, { max: 2 }), createDb(url, { max: 2 })];
    try {
      const results = await Promise.all(replicas.map((r) => migrateToLatest(r.db)));
      const applied = results.flatMap((r) => r.results ?? []).filter((r) => r.status === 'Success');
      // Each migration applied exactly once across the three, in order.
      expect(applied.map((r) => r.migrationName)).toEqual(Object.keys(migrations).sort());
      const tables = await sql<{ n: string }>`select count(*) as n from information_schema.tables where table_schema = 'public' and table_name = 'chats'`.execute(replicas[0]!.db);
      expect(Number(tables.rows[0]!.n)).toBe(1);
      // A later start finds nothing to do.
      expect((await migrateToLatest(replicas[1]!.db)).results).toEqual([]);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });
});
