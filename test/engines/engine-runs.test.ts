// Runs on a real inference engine through the sandbox platform, against the fault fake: stored answers, score, price, progress, events, failures.
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { priceRun } from '@verdict/contract/contract';
import { generationBudget } from '@verdict/platform/engines/inference';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { verifyWebhook } from '@verdict/contract/webhooks';
import type { SandboxInferenceOptions } from '@verdict/platform/sandbox/sandbox';
import { startFakeOpenAi, type FakeOpenAiServer } from '../kit/fakes/openai-faults.js';
import { startReceiver, startTestSandbox, waitFor, waitForRun, type Receiver, type TestSandbox } from '../platform/helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const BENCHMARK = 'capitals-24';
const CATEGORIES = ['europe', 'asia', 'africa'];
const items: BenchmarkItem[] = Array.from({ length: 24 }, (_, i) => ({
  id: `q${String(i + 1).padStart(2, '0')}`,
  question: `What is the capital of country number ${i + 1}?`,
  answer: `City ${i + 1}`,
  category: CATEGORIES[i % 3]!,
}));
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

async function setup(
  inference: Partial<SandboxInferenceOptions> = {},
  latencyMs = 0,
): Promise<{ fake: FakeOpenAiServer; test: TestSandbox; receiver: Receiver; db: pg.Pool }> {
  const fake = await startFakeOpenAi({ models: [{ id: 'tiny-base', chat_template: false }, { id: 'tiny-chat', chat_template: true }], latencyMs });
  // Right on every question at an even position, wrong on the others.
  fake.answer = (prompt) => {
    const index = items.findIndex((item) => item.question === prompt);
    return index % 2 === 0 ? items[index]!.answer : 'no idea';
  };
  const receiver = await startReceiver();
  const test = await startTestSandbox({
    webhookUrl: receiver.url,
    webhookRetry: { baseDelayMs: 20, maxDelayMs: 50 },
    inference: {
      url: fake.url,
      benchmarkItems: async (id: string) => (id === BENCHMARK ? items : null),
      concurrency: 3, retryBaseDelayMs: 10, timeoutMs: 2_000, creditsPer1kTokens: 2, pollIntervalMs: 50, ...inference },
  });
  const db = new pg.Pool({ connectionString: test.databaseUrl, max: 2 });
  cleanups.push(() => fake.close(), () => receiver.stop(), () => test.sandbox.stop(), () => db.end());
  return { fake, test, receiver, db };
}

function events(receiver: Receiver, secret: string, id: string): string[] {
  return receiver.deliveries
    .map((d) => verifyWebhook(secret, d.body, d.headers))
    .filter((e) => e.data.id === id)
    .map((e) => e.type);
}

describe('runs on a real inference engine', () => {
  it('lists the models the endpoint serves instead of the simulated catalogue', async () => {
    const { test } = await setup();
    const models = await test.platform.findModels('');
    expect(models.map((m) => m.id).sort()).toEqual(['tiny-base', 'tiny-chat']);
    expect(await test.platform.findModels('qwen')).toEqual([]);
    expect((await test.platform.getModel('tiny-chat')).kind).toBe('base');
  });

  it('asks every question once with bounded concurrency, stores each answer, scores and prices the run from them, and signals it', async () => {
    const { fake, test, receiver, db } = await setup({}, 40);
    const before = await test.platform.getBalance();
    const launched = await test.platform.launchRun({ benchmarkId: BENCHMARK, modelId: 'tiny-base' }, 'engine-run-1');
    expect(launched).toMatchObject({ status: 'queued', questionCount: items.length, engine: expect.stringMatching(/^OpenAI-compatible endpoint 127\.0\.0\.1:\d+$/) });
    const midway = await waitFor(async () => {
      const run = await test.platform.getRun(launched.id);
      return run.progress!.done > 0 && run.progress!.done < items.length ? run : undefined;
    });
    expect(midway.status).toBe('running');
    expect(midway.estimatedFinishAt).not.toBeNull();
    const run = await waitForRun(test.platform, launched.id);
    expect(run.status).toBe('completed');
    expect(run.progress).toEqual({ done: items.length, total: items.length });

    // Every question asked exactly once, at most 3 at a time, with a budget above its answer's length.
    for (const item of items) expect(fake.countFor(item.question)).toBe(1);
    expect(fake.generationRequests()).toHaveLength(items.length);
    expect(fake.maxInFlight).toBe(3);
    for (const request of fake.generationRequests()) {
      const item = items.find((i) => i.question === request.body!.prompt)!;
      expect(request.path).toBe('/v1/completions');
      expect(request.body!.max_tokens).toBe(generationBudget(words(item.answer)));
    }

    // Stored rows: raw output, extracted answer, score, tokens.
    const rows = (
      await db.query<{ position: number; raw_output: string; extracted_answer: string; score: number; prompt_tokens: number; completion_tokens: number }>(
        'SELECT * FROM sandbox.run_answers WHERE run_id = $1 ORDER BY position',
        [run.id],
      )
    ).rows;
    expect(rows).toHaveLength(items.length);
    for (const row of rows) {
      const item = items[row.position]!;
      expect(row.raw_output).toBe(row.position % 2 === 0 ? item.answer : 'no idea');
      expect(row.score).toBe(row.position % 2 === 0 ? 1 : 0);
      expect(row.prompt_tokens).toBe(words(item.question));
    }

    // The run's score and the results come from the stored answers.
    const right = rows.filter((r) => r.score === 1).length;
    expect(run.score).toBe(Math.round((right / items.length) * 10_000) / 10_000);
    const results = [];
    let cursor: string | undefined;
    do {
      const page = await test.platform.listRunResults(run.id, { limit: 10, ...(cursor ? { cursor } : {}) });
      results.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(results.map((r) => r.questionId)).toEqual(items.map((i) => i.id));
    expect(results.map((r) => r.modelAnswer)).toEqual(rows.map((r) => r.extracted_answer));
    expect(results.map((r) => r.correct)).toEqual(rows.map((r) => r.score === 1));

    // Charged token usage at the configured rate, at most the quoted price, through the ledger.
    const tokens = rows.reduce((sum, r) => sum + r.prompt_tokens + r.completion_tokens, 0);
    expect(run.promptTokens! + run.completionTokens!).toBe(tokens);
    expect(run.chargedCredits).toBe(Math.min(run.priceCredits, Math.ceil((tokens / 1000) * 2 * 100) / 100));
    expect(run.chargedCredits).toBeGreaterThan(0);
    expect(await test.platform.getBalance()).toMatchObject({
      balanceCredits: Math.round((before.balanceCredits - run.chargedCredits!) * 100) / 100,
      reservedCredits: 0,
    });
    await waitFor(() => events(receiver, test.sandbox.webhookSecret, run.id).length > 0);
    expect(events(receiver, test.sandbox.webhookSecret, run.id)).toEqual(['run.completed']);
  });

  it('rides out 429s with Retry-After, 5xx and a hung call without asking a stored question again', async () => {
    const { fake, test } = await setup({ timeoutMs: 300 });
    fake.faults.push(
      { path: '/v1/completions', fault: { kind: 'status', status: 429, retryAfter: '1' } },
      { path: '/v1/completions', fault: { kind: 'status', status: 503 } },
      { path: '/v1/completions', fault: { kind: 'hang', ms: 1_000 } },
      { path: '/tokenize', fault: { kind: 'status', status: 500 } },
    );
    const launched = await test.platform.launchRun({ benchmarkId: BENCHMARK, modelId: 'tiny-base' }, 'engine-run-faults');
    const run = await waitForRun(test.platform, launched.id);
    expect(run.status).toBe('completed');
    expect(fake.generationRequests()).toHaveLength(items.length + 3);
    const asked = items.map((item) => fake.countFor(item.question));
    expect(asked.filter((n) => n === 1).length).toBeGreaterThanOrEqual(items.length - 3);
    expect(run.score).toBe(Math.round((Math.ceil(items.length / 2) / items.length) * 10_000) / 10_000);
  });

  it('records a question the engine cannot answer as an error answer naming the engine, and completes the run', async () => {
    const { fake, test, receiver } = await setup({ concurrency: 1, retries: 1 });
    fake.faults.push(
      { path: '/v1/completions', fault: { kind: 'json', body: { choices: [{ index: 0 }] } } },
    );
    const launched = await test.platform.launchRun({ benchmarkId: BENCHMARK, modelId: 'tiny-base' }, 'engine-run-bad');
    const run = await waitForRun(test.platform, launched.id);
    expect(run.status).toBe('completed');
    expect(run.errorCount).toBe(1);
    // The other questions are scored as usual: right at even positions; the error answer counts wrong.
    expect(run.score).toBeCloseTo(11 / 24, 4);
    const results = await test.platform.listRunResults(run.id, { limit: 100 });
    const failed = results.items.find((r) => r.questionId === items[0]!.id)!;
    expect(failed).toMatchObject({ correct: false, modelAnswer: '' });
    expect(failed.error).toMatch(/^the inference engine \(OpenAI-compatible endpoint .*\) could not answer after its retries: .*without the OpenAI shape: choices\[0\]\.text/);
    expect(results.items.filter((r) => r.error !== null)).toHaveLength(1);
    await waitFor(() => events(receiver, test.sandbox.webhookSecret, run.id).length > 0);
    expect(events(receiver, test.sandbox.webhookSecret, run.id)).toEqual(['run.completed']);
  });

  it('fails a run whose every question is an error answer, naming the first error, charging nothing', async () => {
    const { fake, test, receiver } = await setup({ concurrency: 2, retries: 0 });
    for (let i = 0; i < items.length; i++) fake.faults.push({ path: '/v1/completions', fault: { kind: 'status', status: 400, body: JSON.stringify({ error: { message: 'context too long' } }) } });
    const before = await test.platform.getBalance();
    const launched = await test.platform.launchRun({ benchmarkId: BENCHMARK, modelId: 'tiny-base' }, 'engine-run-all-bad');
    const run = await waitForRun(test.platform, launched.id);
    expect(run.status).toBe('failed');
    expect(run.errorMessage).toMatch(/^no question could be answered \(24 error answers\); the first: the inference engine \(OpenAI-compatible endpoint .*\) could not answer after its retries: .*context too long; nothing was charged$/);
    expect(run.chargedCredits).toBe(0);
    expect(await test.platform.getBalance()).toMatchObject({ balanceCredits: before.balanceCredits, reservedCredits: 0 });
    await waitFor(() => events(receiver, test.sandbox.webhookSecret, run.id).length > 0);
    expect(events(receiver, test.sandbox.webhookSecret, run.id)).toEqual(['run.failed']);
  });

  it('stores an answer holding a NUL (a model may emit any byte) shown escaped, and completes the run', async () => {
    const { fake, test, db } = await setup();
    fake.answer = (prompt) => (prompt === items[0]!.question ? 'City\u00001 and more' : 'no idea');
    const launched = await test.platform.launchRun({ benchmarkId: BENCHMARK, modelId: 'tiny-base' }, 'engine-run-nul');
    const run = await waitForRun(test.platform, launched.id);
    expect(run.status).toBe('completed');
    const row = (await db.query<{ raw_output: string }>('SELECT raw_output FROM sandbox.run_answers WHERE run_id = $1 AND question_id = $2', [run.id, items[0]!.id])).rows[0]!;
    expect(row.raw_output).toBe('City\\u00001 and more');
  });

  it('runs a built-in exact-match benchmark on the engine at the price its catalogue entry quotes', async () => {
    const { test } = await setup({ benchmarkItems: undefined });
    const benchmark = await test.platform.getBenchmark('666');
    const model = await test.platform.getModel('tiny-base');
    const launched = await test.platform.launchRun({ benchmarkId: '666', modelId: 'tiny-base' }, 'built-in');
    expect(launched.priceCredits).toBe(priceRun(benchmark.pricing, model.params));
    const run = await waitForRun(test.platform, launched.id);
    expect(run).toMatchObject({ status: 'completed', questionCount: benchmark.questionCount });
    expect(run.chargedCredits).toBeLessThanOrEqual(run.priceCredits);
  });

  it('refuses a launch the balance cannot cover, and an unknown model or benchmark', async () => {
    const { test } = await setup({ creditsPer1kTokens: 1_000_000 });
    await expect(test.platform.launchRun({ benchmarkId: BENCHMARK, modelId: 'tiny-base' }, 'too-dear')).rejects.toMatchObject({ code: 'insufficient_credits' });
    await expect(test.platform.launchRun({ benchmarkId: BENCHMARK, modelId: 'nope' }, 'no-model')).rejects.toMatchObject({ code: 'not_found' });
    await expect(test.platform.launchRun({ benchmarkId: 'other', modelId: 'tiny-base' }, 'no-benchmark')).rejects.toMatchObject({ code: 'not_found' });
  });
});
