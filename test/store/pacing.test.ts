// Pacing writes: each reservation is one statement (its row lock held for one round trip), and a 429's hold is never shortened.
import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, migrateToLatest, type Db, type DbHandle } from '../../src/store/db.js';
import { claimWrite, holdWrites, reserveUpdateSlot } from '../../src/store/plan-messages.js';
import { reservePostSlot } from '../../src/store/posts.js';
import type { Database } from '../../src/store/tables.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
let logged: Db;
const statements: string[] = [];

beforeAll(async () => {
  handle = createDb(await createTestDatabase('pacing'), { max: 1 });
  await migrateToLatest(handle.db);
  logged = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: handle.pool }),
    log: (event) => {
      if (event.level === 'query') statements.push(event.query.sql.replace(/\s+/g, ' ').trim());
    },
  });
});
afterAll(() => handle.close());

/** The statements one call ran. */
async function run(fn: () => Promise<unknown>): Promise<string[]> {
  statements.length = 0;
  await fn();
  return [...statements];
}

async function seed(): Promise<{ teamId: string; chatId: string; triggerId: string; postId: string }> {
  const teamId = `T${randomBytes(4).toString('hex').toUpperCase()}`;
  const db = handle.db;
  const chat = await db
    .insertInto('chats')
    .values({ team_id: teamId, channel_id: 'C1', thread_ts: '1733150000.000100', owner_user_id: 'U1' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const trigger = await db
    .insertInto('triggers')
    .values({ team_id: teamId, chat_id: chat.id, kind: 'mention', dedupe_key: 'msg:1', user_id: 'U1', payload: '{}', status: 'queued' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const post = await db
    .insertInto('posts')
    .values({ team_id: teamId, chat_id: chat.id, turn_id: null, post_key: 'p1', channel_id: 'C1', thread_ts: '1733150000.000100', payload: '{}' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.insertInto('plan_messages').values({ team_id: teamId, chat_id: chat.id, channel_id: 'C1', thread_ts: '1733150000.000100' }).execute();
  return { teamId, chatId: chat.id, triggerId: trigger.id, postId: post.id };
}

describe('pacing reservations', () => {
  it('are one statement each: no transaction around them', async () => {
    const { teamId, chatId } = await seed();
    for (const call of [
      await run(() => reservePostSlot(logged, teamId, 'C1', 1000)),
      await run(() => reserveUpdateSlot(logged, teamId, chatId, '~plan-chat.update', 1500)),
      await run(() => claimWrite(logged, teamId, '~plan-chat.update:written', 1500)),
      await run(() => holdWrites(logged, teamId, '~plan-chat.update:written', 1500, 4000)),
    ]) {
      expect(call, call.join(' | ')).toHaveLength(1);
    }
  });
});

describe('holdWrites', () => {
  it('after a 429, no claim of the key succeeds before the Retry-After, and an earlier hold is never shortened', async () => {
    const teamId = `T${randomBytes(4).toString('hex').toUpperCase()}`;
    const key = '~plan-chat.update:written';
    expect(await claimWrite(handle.db, teamId, key, 1500)).toBe(0);
    await holdWrites(handle.db, teamId, key, 1500, 4000);
    const wait = await claimWrite(handle.db, teamId, key, 1500);
    expect(wait).toBeGreaterThan(3500);
    expect(wait).toBeLessThanOrEqual(4000);
    // A shorter Retry-After afterwards keeps the longer hold.
    await holdWrites(handle.db, teamId, key, 1500, 1000);
    expect(await claimWrite(handle.db, teamId, key, 1500)).toBeGreaterThan(3000);
  });
});
