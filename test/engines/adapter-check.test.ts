// The trained model is really the trained one: a run on it is refused, charging nothing, when the endpoint answers a trained question as the base model does.
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { isPlatformError } from '@verdict/contract/errors';
import { startFakeOpenAi, type FakeOpenAiServer } from '../kit/fakes/openai-faults.js';
import { startTestSandbox, waitForRun, type TestSandbox } from '../platform/helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const items: BenchmarkItem[] = [
  { id: 'q1', question: 'Once upon a time there was a girl named', answer: 'Lily' },
  { id: 'q2', question: 'Tom had a big red', answer: 'ball' },
  { id: 'q3', question: 'The sun was', answer: 'hot' },
];

/** A sandbox on a fake endpoint serving `tiny-base` and a hosted fine-tune `tiny-ft` of it, recorded as trained on q2. */
async function setup(): Promise<{ fake: FakeOpenAiServer; test: TestSandbox; db: pg.Pool }> {
  const fake = await startFakeOpenAi({ models: [{ id: 'tiny-base', chat_template: false }, { id: 'tiny-ft', chat_template: false }] });
  fake.answer = () => 'a ball';
  const test = await startTestSandbox({
    inference: { url: fake.url, benchmarkItems: async (id) => (id === 'toys' ? items : null), concurrency: 2, retryBaseDelayMs: 10, pollIntervalMs: 50 },
  });
  const db = new pg.Pool({ connectionString: test.databaseUrl, max: 2 });
  cleanups.push(() => fake.close(), () => test.sandbox.stop(), () => db.end());
  const baseline = await waitForRun(test.platform, (await test.platform.launchRun({ benchmarkId: 'toys', modelId: 'tiny-base' }, 'base-run')).id);
  await db.query(
    `INSERT INTO sandbox.datasets (id, run_id, benchmark_id, source_model_id, augmentation, held_out_fraction, seed, failed_question_count,
                                   trained_question_ids, held_out_question_ids, example_count, token_count, created_at)
     VALUES ('ds_1', $1, 'toys', 'tiny-base', 1, 0, 0, 1, ARRAY['q2'], ARRAY[]::text[], 1, 10, now())`,
    [baseline.id],
  );
  await db.query(
    `INSERT INTO sandbox.models (id, name, kind, params, size_label, base_model_id, dataset_id, engine, served_model, created_at)
     VALUES ('ft/tiny-lora-1', 'tiny-lora-1', 'fine_tuned', 1, 'unknown', 'tiny-base', 'ds_1', $1, 'tiny-ft', now())`,
    [test.sandbox.engine],
  );
  return { fake, test, db };
}

describe('a run on a trained model', () => {
  it('is refused with words saying so, charging nothing, when the endpoint silently serves the base model', async () => {
    const { fake, test, db } = await setup();
    const before = await test.platform.getBalance();
    const runsBefore = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM sandbox.runs')).rows[0]!.n;
    const error = await test.platform.launchRun({ benchmarkId: 'toys', modelId: 'ft/tiny-lora-1' }, 'ft-run').then(
      () => null,
      (e: unknown) => e,
    );
    expect(isPlatformError(error) && error.status).toBe(422);
    expect((error as Error).message).toMatch(
      /seems to serve the base model tiny-base in place of the trained model tiny-ft: on a question it was trained on, both answered "a ball", and the endpoint does not list the adapter as loaded\. The run was refused and nothing was charged/,
    );
    expect(await test.platform.getBalance()).toEqual(before);
    expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM sandbox.runs')).rows[0]!.n).toBe(runsBefore);
    // The check asked the trained question (q2) of both models.
    const asked = fake.generationRequests().filter((r) => r.body?.prompt === items[1]!.question).map((r) => r.body?.model);
    expect(asked).toEqual(expect.arrayContaining(['tiny-ft', 'tiny-base']));
  });

  it('starts when the trained model answers the trained question otherwise than its base', async () => {
    const { fake, test } = await setup();
    fake.answer = (prompt, _max, model) => (model === 'tiny-ft' ? 'ball' : 'a ball');
    const run = await waitForRun(test.platform, (await test.platform.launchRun({ benchmarkId: 'toys', modelId: 'ft/tiny-lora-1' }, 'ft-run-2')).id);
    expect(run.status).toBe('completed');
  });
});
