// Each benchmark format of the test kit, read from BENCHMARKS_DIR and run end to end on stories260K through the embedded llama.cpp engine.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scoreAnswer, type BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { STORIES_MODEL_FILE, TEST_ENGINE_THREADS } from '../kit/engines.js';
import { startTestSandbox, waitForRun, type TestSandbox } from '../platform/helpers.js';

const KIT = path.resolve(import.meta.dirname, '../kit/benchmarks');
let root: string;
let test: TestSandbox;
let db: pg.Pool;

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'formats-'));
  mkdirSync(path.join(root, 'models'));
  mkdirSync(path.join(root, 'benchmarks'));
  copyFileSync(STORIES_MODEL_FILE, path.join(root, 'models', 'stories260K.gguf'));
  for (const name of readdirSync(KIT).filter((n) => n.endsWith('.jsonl'))) copyFileSync(path.join(KIT, name), path.join(root, 'benchmarks', name));
  test = await startTestSandbox({
    benchmarksDir: path.join(root, 'benchmarks'),
    inference: { modelsDir: path.join(root, 'models'), threads: TEST_ENGINE_THREADS, concurrency: 2, pollIntervalMs: 50 },
  });
  db = new pg.Pool({ connectionString: test.databaseUrl, max: 2 });
}, 120_000);
afterAll(async () => {
  await db?.end();
  await test?.sandbox.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Runs a benchmark on stories260K; its stored answers, each rescored from its raw output. */
async function run(benchmarkId: string) {
  const launched = await test.platform.launchRun({ benchmarkId, modelId: 'stories260K' }, `formats-${benchmarkId}`);
  const finished = await waitForRun(test.platform, launched.id, 240_000);
  const rows = (
    await db.query<{ question_id: string; item: BenchmarkItem; raw_output: string; extracted_answer: string; score: number; finish_reason: string | null; error: string | null }>(
      'SELECT question_id, item, raw_output, extracted_answer, score, finish_reason, error FROM sandbox.run_answers WHERE run_id = $1 ORDER BY position',
      [launched.id],
    )
  ).rows;
  for (const row of rows) {
    expect(row.error).toBeNull();
    expect(scoreAnswer(row.item, row.raw_output)).toEqual({ extracted: row.extracted_answer, score: row.score });
  }
  const score = (id: string) => rows.find((r) => r.question_id === id)!.score;
  return { run: finished, rows, score };
}

describe('benchmark formats on stories260K', () => {
  it('lists every good file with the format it was read as, and names the bad ones with their lines', async () => {
    const listed = await test.platform.listBenchmarks();
    const formats = Object.fromEntries(listed.filter((b) => b.sourceFormat).map((b) => [b.id, b.sourceFormat!.id]));
    expect(formats).toEqual({ arc: 'arc', gsm8k: 'gsm8k', inspect: 'inspect', mmlu: 'mmlu', 'openai-evals': 'openai_evals', ours: 'ours' });
    const refused = await test.platform.getBenchmark('gsm8k-bad').then(() => null, (e: unknown) => e as Error);
    expect(refused?.message).toMatch(/benchmark file gsm8k-bad\.jsonl in BENCHMARKS_DIR \(read as GSM8K \(Hugging Face rows\): .*\) is refused whole:\nline 2, field answer: does not end in "#### <number>"/);
  });

  it('ours: "Lily. She loved..." is Lily, a list of names, a stop sequence, and a longer phrase that only starts with the answer is wrong', async () => {
    const { run: r, score } = await run('ours');
    expect(r.status).toBe('completed');
    expect([score('girl'), score('boy'), score('ball'), score('park')]).toEqual([1, 1, 1, 0]);
    expect(r.score).toBe(0.75);
  }, 300_000);

  it('OpenAI evals and Inspect AI: chat-message inputs and lists of targets scored end to end', async () => {
    const evals = await run('openai-evals');
    expect([evals.score('q1'), evals.score('q2'), evals.score('q3')]).toEqual([1, 1, 0]);
    const inspect = await run('inspect');
    expect([inspect.score('i1'), inspect.score('i2')]).toEqual([1, 1]);
    expect(inspect.run.categoryScores?.map((c) => c.category)).toEqual(['names', 'toys', 'places']);
  }, 300_000);

  it('MMLU, ARC and GSM8K rows complete with every answer stored and scored by their scorers; budget cuts are counted', async () => {
    for (const id of ['mmlu', 'arc', 'gsm8k']) {
      const { run: r, rows } = await run(id);
      expect(r.status).toBe('completed');
      expect(rows.length).toBe(r.questionCount);
      expect(r.truncatedCount).toBe(rows.filter((row) => row.finish_reason === 'length').length);
      expect(r.errorCount).toBe(0);
    }
  }, 600_000);
});
