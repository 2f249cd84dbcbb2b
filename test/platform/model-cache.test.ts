// The platform's model lookups: a row is read from Postgres once, never cached from inside a
// transaction (it may roll back), and the engine's model sync starts the cache again.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceContext, SandboxContext } from '../../packages/platform/src/sandbox/context.js';
import { modelById, requireModel, syncEngineModels } from '../../packages/platform/src/sandbox/models.js';
import { migrateSandboxSchema } from '../../packages/platform/src/sandbox/schema.js';
import { upsertBaseModels } from '../../packages/platform/src/sandbox/store/models.js';
import { createTestDatabase } from '../kit/database.js';

let pool: pg.Pool;
/** Statements the pool ran, by text. */
const ran: string[] = [];

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createTestDatabase('model_cache'), max: 2 });
  await migrateSandboxSchema(pool);
  await upsertBaseModels(pool);
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    ran.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text));
    return query(...args);
  };
});
afterAll(() => pool.end());

const context = () => ({ pool, models: new Map(), now: () => new Date() }) as unknown as SandboxContext;
const modelReads = () => ran.filter((q) => q.includes('FROM sandbox.models WHERE id')).length;
const ANY_BASE = 'qwen/Qwen2.5-0.5B-Instruct';

describe('modelById', () => {
  it('reads a model once, then answers from the context; an unknown one is read each time and is a 404 to require', async () => {
    const ctx = context();
    const before = modelReads();
    const first = await modelById(ctx, ANY_BASE);
    expect(first?.id).toBe(ANY_BASE);
    expect(await modelById(ctx, ANY_BASE)).toBe(first);
    expect(modelReads() - before).toBe(1);
    expect(await modelById(ctx, 'nobody/none')).toBeNull();
    await expect(requireModel(ctx, pool, 'nobody/none')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    expect(modelReads() - before).toBe(3);
  });

  it('keeps nothing read inside a transaction: a model inserted there and rolled back is not found afterwards', async () => {
    const ctx = context();
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO sandbox.models (id, name, kind, params, size_label, created_at) VALUES ('ft/ghost', 'ghost', 'fine_tuned', 1, '1', now())`);
      expect((await modelById(ctx, 'ft/ghost', client))?.id).toBe('ft/ghost');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await modelById(ctx, 'ft/ghost')).toBeNull();
  });

  it("is emptied by the engine's model sync, which may change a base model's row", async () => {
    const ctx = context();
    await modelById(ctx, ANY_BASE);
    expect(ctx.models.size).toBe(1);
    const inference = { engine: { label: 'llama.cpp', listModels: async () => [{ id: 'local/model.gguf', parent: null, params: 1000 }] } } as unknown as InferenceContext;
    await syncEngineModels(ctx, inference);
    expect(ctx.models.size).toBe(0);
    expect((await modelById(ctx, 'local/model.gguf'))?.engine).toBe('llama.cpp');
  });
});
