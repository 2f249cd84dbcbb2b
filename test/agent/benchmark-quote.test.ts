// The price the bot quotes before a benchmark launch is the price the platform charges for it.
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handlerFor } from '../../src/agent/triggers/index.js';
import type { ReplyPart } from '../../src/agent/reply.js';
import { benchmarkLaunch } from '../../src/agent/tools/benchmark-launch.js';
import type { ToolContext } from '../../src/agent/tools/tool.js';
import { loadConfig } from '../../src/config.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { priceRun, priceTiers, type BenchmarkPricing, type BenchmarkWire } from '@verdict/contract/contract';
import { BASE_MODELS, BENCHMARKS } from '@verdict/platform/sandbox/catalogue';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import type { Chat, Trigger } from '../../src/store/tables.js';
import { createTestDatabase } from '../kit/database.js';
import { startTestSandbox, type TestSandbox } from '../platform/helpers.js';

// Every launch is refused for confirmation, so the tool's quote is read from its Approve button.
const config = loadConfig({
  SLACK_BOT_TOKEN: 'xoxb-t',
  SLACK_SIGNING_SECRET: 's',
  ANTHROPIC_API_KEY: 'k',
  SPEND_CONFIRM_THRESHOLD: '0',
});

// A benchmark whose size tiers the platform lists out of size order. The platform charges the first
// listed tier a model fits in (8 credits for a 0.5B model); the bot's old copy of the rule sorted the
// tiers first and quoted 4.
const OUT_OF_ORDER = '104';
const outOfOrderPricing: BenchmarkWire['pricing'] = {
  type: 'per_model_size',
  tiers: [
    { max_params: 3_500_000_000, credits: 8 },
    { max_params: 1_000_000_000, credits: 4 },
    { max_params: null, credits: 50 },
  ],
};

let handle: DbHandle;
let sandbox: TestSandbox;
let ctx: ToolContext;
let originalPricing: BenchmarkWire['pricing'];

beforeAll(async () => {
  // The in-process sandbox serves and charges from this catalogue entry (this test file's copy of the module).
  const entry = BENCHMARKS.find((b) => b.id === OUT_OF_ORDER)!;
  originalPricing = entry.pricing;
  (entry as { pricing: BenchmarkWire['pricing'] }).pricing = outOfOrderPricing;

  handle = createDb(await createTestDatabase('quote'));
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
  const chat = await handle.db
    .insertInto('chats')
    .values({ team_id: 'T1', channel_id: 'C1', thread_ts: '1.0', owner_user_id: 'UOWNER' })
    .returningAll()
    .executeTakeFirstOrThrow();
  sandbox = await startTestSandbox({ startingBalance: 1_000_000 });
  const trigger = { id: '1', team_id: 'T1', chat_id: chat.id, kind: 'mention', user_id: 'UOWNER', payload: {} } as unknown as Trigger;
  ctx = { db: handle.db, config, logger: pino({ level: 'silent' }), platform: sandbox.platform, sandbox: true, chat: chat as Chat, trigger, authority: handlerFor('mention').authority } as unknown as ToolContext;
});

afterAll(async () => {
  await sandbox?.sandbox.stop();
  await handle?.close();
  (BENCHMARKS.find((b) => b.id === OUT_OF_ORDER) as { pricing: BenchmarkWire['pricing'] }).pricing = originalPricing;
});

/** The credits of the approval the tool attaches when the spend guard asks for confirmation. */
async function quote(benchmarkId: string, modelId: string): Promise<number> {
  const result = await benchmarkLaunch.run({ benchmarkId, modelId }, ctx);
  expect(result.isError, result.content).toBe(true);
  const approval = result.parts?.find((part): part is Extract<ReplyPart, { kind: 'approval' }> => part.kind === 'approval');
  expect(approval, 'an approval is attached').toBeDefined();
  return approval!.credits;
}

describe("the bot's quote for a benchmark run", () => {
  it('is what the platform charges, for every built-in benchmark and a model of each size tier', async () => {
    // Below 1B, 1B to 3.5B, 3.5B to 10B parameters: each catalogue tier once (every launch takes a while on a loaded machine).
    const models = ['qwen/Qwen2.5-0.5B-Instruct', 'meta-llama/Llama-3.2-3B-Instruct', 'qwen/Qwen2.5-7B-Instruct'].map((id) => BASE_MODELS.find((m) => m.id === id)!);
    const differences: string[] = [];
    for (const benchmark of BENCHMARKS) {
      for (const model of models) {
        const quoted = await quote(benchmark.id, model.id);
        const run = await sandbox.platform.launchRun({ benchmarkId: benchmark.id, modelId: model.id }, `quote-${benchmark.id}-${model.id}`);
        if (quoted !== run.priceCredits) differences.push(`${benchmark.id} on ${model.id}: quoted ${quoted}, charged ${run.priceCredits}`);
      }
    }
    expect(differences).toEqual([]);
  });

  it('follows the listed tier order, as the platform charges, when tiers are out of size order', async () => {
    const small = BASE_MODELS.find((m) => m.params < 1_000_000_000)!;
    expect((await sandbox.platform.getBenchmark(OUT_OF_ORDER)).pricing.type).toBe('per_model_size');
    const quoted = await quote(OUT_OF_ORDER, small.id);
    const run = await sandbox.platform.launchRun({ benchmarkId: OUT_OF_ORDER, modelId: small.id }, 'quote-out-of-order');
    expect(run.priceCredits).toBe(8);
    expect(quoted).toBe(8);
  });
});

describe('priceTiers, the tiers the price is described by', () => {
  // The contract's words (docs/platform-api.md): the first tier in listed order whose max is null or >= params.
  const listedOrderPrice = (tiers: { maxParams: number | null; credits: number }[], params: number) =>
    (tiers.find((t) => t.maxParams === null || params <= t.maxParams) ?? tiers.at(-1)!).credits;

  it('give every model size the listed-order price that priceRun charges, and ascend by size', () => {
    const tier = fc.record({ maxParams: fc.option(fc.integer({ min: 1, max: 20 }), { nil: null }), credits: fc.integer({ min: 1, max: 99 }) });
    fc.assert(
      fc.property(fc.array(tier, { minLength: 1, maxLength: 6 }), fc.integer({ min: 0, max: 25 }), (tiers, params) => {
        const pricing: Extract<BenchmarkPricing, { type: 'per_model_size' }> = { type: 'per_model_size', tiers };
        const described = priceTiers(pricing);
        const fits = described.find((t) => t.maxParams === null || params <= t.maxParams)!;
        expect(fits.credits).toBe(listedOrderPrice(tiers, params));
        expect(priceRun(pricing, params)).toBe(listedOrderPrice(tiers, params));
        const bounds = described.map((t) => t.maxParams ?? Infinity);
        expect(bounds).toEqual([...bounds].sort((a, b) => a - b));
        expect(described.at(-1)!.maxParams).toBeNull();
      }),
    );
  });
});
