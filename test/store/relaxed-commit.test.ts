// Relaxed commits: which of the worker's writes skip the WAL flush, and which stay durable.
import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, migrateToLatest, relaxedCommit, relaxedCommitFrom, type Db, type DbHandle } from '../../src/store/db.js';
import { appendMessage } from '../../src/store/messages.js';
import { claimWrite, holdWrites, recordPlanWrite, reserveUpdateSlot } from '../../src/store/plan-messages.js';
import { markPostAttempt, markPostDelivered, reservePostSlot, setPostPermalink } from '../../src/store/posts.js';
import type { Database } from '../../src/store/tables.js';
import { recordModelCall, startTurn } from '../../src/store/turns.js';
import { createWorkerWaker } from '../../src/store/wake-workers.js';
import pg from 'pg';
import pino from 'pino';
import { createTestDatabase } from '../kit/database.js';
import { waitUntil } from '../kit/wait.js';

let handle: DbHandle;
let logged: Db;
const statements: string[] = [];

beforeAll(async () => {
  // One connection: a setting left behind by a transaction would show in the next statement.
  handle = createDb(await createTestDatabase('relaxed'), { max: 1 });
  await migrateToLatest(handle.db);
  logged = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: handle.pool }),
    log: (event) => {
      if (event.level === 'query') statements.push(event.query.sql.replace(/\s+/g, ' ').trim());
    },
  });
});
afterAll(() => handle.close());

const setting = async (db: Db) => (await sql<{ s: string }>`select current_setting('synchronous_commit') as s`.execute(db)).rows[0]!.s;

/** The statements one call ran, and whether it asked for a relaxed commit. */
async function run(fn: () => Promise<unknown>): Promise<{ relaxed: boolean; statements: string[] }> {
  statements.length = 0;
  await fn();
  const ran = [...statements];
  const relaxed = ran.includes('set local synchronous_commit = off') || ran.some((q) => q.includes("set_config('synchronous_commit', 'off', true)"));
  return { relaxed, statements: ran };
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

describe('relaxedCommit', () => {
  it('commits its writes with synchronous_commit off for that transaction alone', async () => {
    const teamId = `T${randomBytes(4).toString('hex').toUpperCase()}`;
    expect(await setting(handle.db)).toBe('on');
    const inside = await relaxedCommit(handle.db, async (trx) => {
      await trx.insertInto('channel_post_slots').values({ team_id: teamId, channel_id: 'C1', last_slot: sql`now()` }).execute();
      return setting(trx);
    });
    expect(inside).toBe('off');
    // The same (only) connection is back to durable commits, and the write is there.
    expect(await setting(handle.db)).toBe('on');
    const rows = await handle.db.selectFrom('channel_post_slots').select('channel_id').where('team_id', '=', teamId).execute();
    expect(rows).toEqual([{ channel_id: 'C1' }]);
  });

  it('rolls back on a failure, and inside a caller\'s transaction leaves the commit to the caller', async () => {
    const teamId = `T${randomBytes(4).toString('hex').toUpperCase()}`;
    await expect(
      relaxedCommit(handle.db, async (trx) => {
        await trx.insertInto('channel_post_slots').values({ team_id: teamId, channel_id: 'C1', last_slot: sql`now()` }).execute();
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const outer = await handle.db.transaction().execute(async (trx) => {
      const nested = await relaxedCommit(trx, (inner) => setting(inner));
      return { nested, after: await setting(trx) };
    });
    expect(outer).toEqual({ nested: 'on', after: 'on' });
    expect(await handle.db.selectFrom('channel_post_slots').select('channel_id').where('team_id', '=', teamId).execute()).toEqual([]);
  });
});

describe('relaxedCommitFrom', () => {
  it('relaxes a statement sent on its own for that statement alone; inside a transaction it leaves the commit to the caller', async () => {
    const during = await sql<{ s: string }>`select current_setting('synchronous_commit') as s from ${relaxedCommitFrom(handle.db)}`.execute(handle.db);
    expect(during.rows).toEqual([{ s: 'off' }]);
    // The same (only) connection commits durably again.
    expect(await setting(handle.db)).toBe('on');
    const inTransaction = await handle.db.transaction().execute(async (trx) => {
      const rows = (await sql<{ s: string }>`select current_setting('synchronous_commit') as s from ${relaxedCommitFrom(trx)}`.execute(trx)).rows;
      return { rows, after: await setting(trx) };
    });
    expect(inTransaction).toEqual({ rows: [{ s: 'on' }], after: 'on' });
  });

  it('the pacing reservations are one statement each: no transaction around them', async () => {
    const { teamId, chatId } = await seed();
    for (const call of [
      await run(() => reservePostSlot(logged, teamId, 'C1', 1000)),
      await run(() => reserveUpdateSlot(logged, teamId, chatId, '~plan-chat.update', 1500)),
      await run(() => claimWrite(logged, teamId, '~plan-chat.update:written', 1500)),
      await run(() => holdWrites(logged, teamId, '~plan-chat.update:written', 1500, 4000)),
    ]) {
      expect(call.statements, call.statements.join(' | ')).toHaveLength(1);
      expect(call.relaxed).toBe(true);
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

describe('which writes commit relaxed', () => {
  it('pacing slots, a turn\'s start and its messages, a delivered post and its permalink, the plan\'s last write', async () => {
    const { teamId, chatId, triggerId, postId } = await seed();
    const relaxed = [
      await run(() => startTurn(logged, { teamId, chatId, triggerId, model: 'm' })),
      await run(() => appendMessage(logged, { teamId, chatId, turnId: null, role: 'user', content: [{ type: 'text', text: 'hello' }] })),
      await run(() => reservePostSlot(logged, teamId, 'C1', 1000)),
      await run(() => markPostDelivered(logged, teamId, postId, '1733150001.000200', null)),
      await run(() => setPostPermalink(logged, teamId, postId, 'https://example.slack.com/archives/C1/p1')),
      await run(() => reserveUpdateSlot(logged, teamId, chatId, '~plan-chat.update', 1500)),
      await run(() => claimWrite(logged, teamId, '~plan-chat.update:written', 1500)),
      await run(() => recordPlanWrite(logged, teamId, chatId, { slackTs: '1733150002.000300', state: {}, textOnly: false })),
    ];
    for (const call of relaxed) expect(call, call.statements.join(' | ')).toMatchObject({ relaxed: true });
    // And each did its work.
    const post = await handle.db.selectFrom('posts').select(['status', 'slack_ts', 'permalink']).where('id', '=', postId).executeTakeFirstOrThrow();
    expect(post).toEqual({ status: 'posted', slack_ts: '1733150001.000200', permalink: 'https://example.slack.com/archives/C1/p1' });
  });

  it('the web role\'s wake-up of the workers: its NOTIFY commits relaxed and still reaches a listener', async () => {
    const listener = new pg.Client(handle.pool.options.connectionString);
    await listener.connect();
    try {
      await listener.query('listen "jobs:insert"');
      const heard = new Promise<{ count: number; ingest: boolean }>((resolve) => listener.on('notification', (n) => resolve(JSON.parse(n.payload ?? '{}'))));
      const call = await run(async () => {
        createWorkerWaker(logged, pino({ level: 'silent' })).wake(3);
        await heard;
        // The listener may hear the commit before the statement's answer (and its log line) is back.
        await waitUntil(() => statements.length > 0, 5000, 'the wake-up statement');
      });
      expect(await heard).toMatchObject({ count: 3, ingest: true });
      expect(call.statements, call.statements.join(' | ')).toHaveLength(1);
      expect(call).toMatchObject({ relaxed: true });
      expect(await setting(handle.db)).toBe('on');
    } finally {
      await listener.end();
    }
  });

  it('a post attempt and a model call\'s cost stay durable: they guard effects outside the database', async () => {
    const { teamId, chatId, triggerId, postId } = await seed();
    const { turn } = await startTurn(handle.db, { teamId, chatId, triggerId, model: 'm' });
    const attempt = await run(() => markPostAttempt(logged, teamId, postId));
    const call = await run(() =>
      recordModelCall(logged, {
        teamId,
        chatId,
        turnId: turn.id,
        usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
        costUsd: '0.000018',
        content: [{ type: 'text', text: 'hi' }],
        stopReason: 'end_turn',
      }),
    );
    expect(attempt).toMatchObject({ relaxed: false });
    expect(call).toMatchObject({ relaxed: false });
    expect(attempt.statements.length).toBeGreaterThan(0);
    expect(call.statements.length).toBeGreaterThan(0);
  });
});
