// Runs on stories260K through the embedded llama.cpp server, and through INFERENCE_URL pointing at it: answers equal a direct node-llama-cpp greedy call.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getLlama, LlamaCompletion, LlamaLogLevel } from 'node-llama-cpp';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { startLlamaServer, type LlamaServer } from '@verdict/platform/engines/llama-server';
import type { SandboxInferenceOptions } from '@verdict/platform/sandbox/sandbox';
import { STORIES_MODEL_FILE, TEST_ENGINE_THREADS } from '../kit/engines.js';
import { startTestSandbox, waitForRun, type TestSandbox } from '../platform/helpers.js';

const items: BenchmarkItem[] = [
  { id: 'lily', question: 'Once upon a time', answer: 'there was a little girl named Lily', scorer: 'contains' },
  { id: 'park', question: 'One day, Tom went to the park', answer: 'he saw a big tree', scorer: 'contains' },
  { id: 'dog', question: 'The little dog was very', answer: 'happy', scorer: 'contains' },
  { id: 'sun', question: 'The sun was shining and', answer: 'the birds were singing', scorer: 'contains' },
  { id: 'mom', question: 'Lily said to her mom', answer: 'can I play outside', scorer: 'contains' },
  { id: 'ball', question: 'Ben had a red ball', answer: 'he liked to play with it', scorer: 'contains' },
];

let modelsDir: string;
let server: LlamaServer;
const sandboxes: TestSandbox[] = [];

beforeAll(async () => {
  modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-'));
  fs.copyFileSync(STORIES_MODEL_FILE, path.join(modelsDir, 'stories260K.gguf'));
  server = await startLlamaServer({ modelsDir, threads: TEST_ENGINE_THREADS, parallel: 2 });
});
afterAll(async () => {
  for (const sandbox of sandboxes) await sandbox.sandbox.stop();
  await server?.close();
  fs.rmSync(modelsDir, { recursive: true, force: true });
});

async function greedy(prompt: string, maxTokens: number): Promise<string> {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: path.join(modelsDir, 'stories260K.gguf') });
  const context = await model.createContext({ contextSize: 512, threads: TEST_ENGINE_THREADS });
  try {
    const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
    return await completion.generateCompletion(prompt, { maxTokens, temperature: 0 });
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

async function runOn(inference: Partial<SandboxInferenceOptions>) {
  const test = await startTestSandbox({ inference: { benchmarkItems: async (id) => (id === 'stories' ? items : null), pollIntervalMs: 50, ...inference } });
  sandboxes.push(test);
  const models = await test.platform.findModels('stories');
  expect(models.map((m) => m.id)).toEqual(['stories260K']);
  const launched = await test.platform.launchRun({ benchmarkId: 'stories', modelId: 'stories260K' }, `llama-${sandboxes.length}`);
  const run = await waitForRun(test.platform, launched.id, 240_000);
  const db = new pg.Pool({ connectionString: test.databaseUrl, max: 1 });
  try {
    const rows = (
      await db.query<{ question_id: string; prompt: string; raw_output: string; max_tokens: number; score: number; style: string; completion_tokens: number }>(
        'SELECT * FROM sandbox.run_answers WHERE run_id = $1 ORDER BY position',
        [run.id],
      )
    ).rows;
    return { run, rows, test };
  } finally {
    await db.end();
  }
}

describe('runs on stories260K through llama.cpp', () => {
  let embedded: Awaited<ReturnType<typeof runOn>>;

  it('the embedded server answers every question as a direct greedy node-llama-cpp call does; the score comes from the stored answers', async () => {
    embedded = await runOn({ modelsDir, threads: TEST_ENGINE_THREADS, concurrency: 2 });
    const { run, rows } = embedded;
    expect(run).toMatchObject({ status: 'completed', engine: 'llama.cpp, CPU, 1 thread', questionCount: items.length });
    expect(rows).toHaveLength(items.length);
    for (const row of rows) {
      expect(row.style).toBe('completion');
      expect(row.raw_output.length).toBeGreaterThan(0);
      expect(row.completion_tokens).toBeLessThanOrEqual(row.max_tokens);
    }
    for (const row of rows.slice(0, 3)) expect(row.raw_output).toBe(await greedy(row.prompt, row.max_tokens));
    const mean = rows.reduce((sum, r) => sum + r.score, 0) / rows.length;
    expect(run.score).toBe(Math.round(mean * 10_000) / 10_000);
    const results = await embedded.test.platform.listRunResults(run.id);
    expect(results.items.map((r) => r.score)).toEqual(rows.map((r) => r.score));
    expect(rows.find((r) => r.question_id === 'lily')!.score).toBe(1);
  }, 300_000);

  it('the same run through INFERENCE_URL pointing at the embedded server gives the same answers over HTTP', async () => {
    const { run, rows } = await runOn({ url: `${server.url}/v1`, concurrency: 2 });
    expect(run.status).toBe('completed');
    expect(run.engine).toBe(`OpenAI-compatible endpoint ${new URL(server.url).host}`);
    expect(rows.map((r) => r.raw_output)).toEqual(embedded.rows.map((r) => r.raw_output));
    expect(run.score).toBe(embedded.run.score);
  }, 300_000);
});
