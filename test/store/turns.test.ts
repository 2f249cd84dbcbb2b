// Turn bookkeeping in single statements: start (or resume) a turn, record a model call.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { recordModelCall, startTurn } from '../../src/store/turns.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
const db = () => handle.db;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('turns'), { max: 4 });
  await migrateToLatest(handle.db);
});
afterAll(() => handle.close());

async function seedTrigger(status: 'queued' | 'running'): Promise<{ teamId: string; chatId: string; triggerId: string }> {
  const teamId = `T${randomBytes(4).toString('hex').toUpperCase()}`;
  const chat = await db()
    .insertInto('chats')
    .values({ team_id: teamId, channel_id: 'C1', thread_ts: '1733150000.000100', owner_user_id: 'U1' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const trigger = await db()
    .insertInto('triggers')
    .values({ team_id: teamId, chat_id: chat.id, kind: 'mention', dedupe_key: 'msg:1', user_id: 'U1', payload: '{}', status, error: 'earlier attempt' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { teamId, chatId: chat.id, triggerId: trigger.id };
}

describe('startTurn', () => {
  it('creates the turn and marks the trigger running; a retry finds the same turn', async () => {
    const { teamId, chatId, triggerId } = await seedTrigger('queued');
    const first = await startTurn(db(), { teamId, chatId, triggerId, model: 'claude-test' });
    expect(first.created).toBe(true);
    expect(first.turn).toMatchObject({ team_id: teamId, chat_id: chatId, trigger_id: triggerId, model: 'claude-test', status: 'running' });
    expect(first.turn.started_at).toBeInstanceOf(Date);
    const trigger = await db().selectFrom('triggers').select(['status', 'error']).where('id', '=', triggerId).executeTakeFirstOrThrow();
    expect(trigger).toEqual({ status: 'running', error: null });

    const again = await startTurn(db(), { teamId, chatId, triggerId, model: 'claude-test' });
    expect(again.created).toBe(false);
    expect(again.turn.id).toBe(first.turn.id);
    expect(again.turn).not.toHaveProperty('created');
  });

  it('does not touch another workspace\'s trigger', async () => {
    const { chatId, triggerId } = await seedTrigger('queued');
    await expect(startTurn(db(), { teamId: 'TOTHER', chatId, triggerId, model: 'm' })).rejects.toThrow();
    const trigger = await db().selectFrom('triggers').select('status').where('id', '=', triggerId).executeTakeFirstOrThrow();
    expect(trigger.status).toBe('queued');
  });
});

describe('recordModelCall', () => {
  it('adds the usage and exact price to the turn and appends the assistant message', async () => {
    const { teamId, chatId, triggerId } = await seedTrigger('queued');
    const { turn } = await startTurn(db(), { teamId, chatId, triggerId, model: 'm' });
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 100, cacheWriteTokens: 20 };
    await recordModelCall(db(), { teamId, chatId, turnId: turn.id, usage, costUsd: '0.0000012345', content: [{ type: 'text', text: 'a' }], stopReason: 'tool_use' });
    const message = await recordModelCall(db(), { teamId, chatId, turnId: turn.id, usage, costUsd: '0.0000000001', content: [{ type: 'text', text: 'b' }], stopReason: 'end_turn' });
    expect(message).toMatchObject({ role: 'assistant', turn_id: turn.id, content: [{ type: 'text', text: 'b' }], stop_reason: 'end_turn', usage });
    const row = await db().selectFrom('turns').selectAll().where('id', '=', turn.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ model_calls: 2, input_tokens: 20, output_tokens: 10, cache_read_tokens: 200, cache_write_tokens: 40 });
    expect(Number(row.cost_usd)).toBeCloseTo(0.0000012346, 12);
    expect(row.cost_usd).toMatch(/^0\.0000012346/);
  });

  it('refuses a turn of another workspace and stores nothing', async () => {
    const { teamId, chatId, triggerId } = await seedTrigger('queued');
    const { turn } = await startTurn(db(), { teamId, chatId, triggerId, model: 'm' });
    const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 };
    await expect(recordModelCall(db(), { teamId: 'TOTHER', chatId, turnId: turn.id, usage, costUsd: '1', content: [], stopReason: null })).rejects.toThrow('not found');
    const messages = await db().selectFrom('messages').select('id').where('turn_id', '=', turn.id).execute();
    expect(messages).toHaveLength(0);
  });
});
