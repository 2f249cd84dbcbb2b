// A run survives any output: NUL, invalid UTF-8, lone surrogates, 100 kB of text and budget cuts from an OpenAI-compatible endpoint are stored, counted and shown.
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { describeRun } from '../../src/agent/tools/run-status.js';
import { startFakeOpenAi } from '../kit/fakes/openai-faults.js';
import { startTestSandbox, waitForRun } from '../platform/helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const HUGE = 'A'.repeat(100_000);
const items: BenchmarkItem[] = [
  { id: 'utf8', question: 'Who came to tea?', answer: 'Tom' },
  { id: 'nul', question: 'What was the girl called?', answer: 'Lily' },
  { id: 'surrogate', question: 'Who was the boy?', answer: 'Ben' },
  { id: 'huge', question: 'Shout.', answer: 'A' },
  { id: 'length', question: 'Tell a long story.', answer: 'Sue' },
  { id: 'stop', question: 'Name a pet.', answer: 'dog', scorer: 'contains', stop: ['END'] },
];
const outputs: Record<string, string> = {
  'What was the girl called?': 'Lily.\u0000',
  'Who was the boy?': 'Ben \ud800',
  'Shout.': HUGE,
  'Tell a long story.': Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '),
  'Name a pet.': 'cat END dog',
};

describe('a run survives any output', () => {
  it('stores NUL, invalid UTF-8, lone surrogates, 100 kB and budget cuts; the run completes and says how many answers were cut', async () => {
    const fake = await startFakeOpenAi({ models: [{ id: 'tiny-base', chat_template: false }] });
    fake.answer = (prompt) => outputs[prompt] ?? 'no idea';
    // The first completion (question "utf8", asked first at concurrency 1) carries bytes that are not UTF-8.
    const invalid = Buffer.concat([
      Buffer.from('{"choices":[{"index":0,"text":"Tom '),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('","finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}'),
    ]);
    fake.faults.push({ path: '/v1/completions', fault: { kind: 'bytes', body: invalid } });
    const test = await startTestSandbox({
      inference: { url: fake.url, benchmarkItems: async (id) => (id === 'outputs' ? items : null), concurrency: 1, retryBaseDelayMs: 10, pollIntervalMs: 50 },
    });
    const db = new pg.Pool({ connectionString: test.databaseUrl, max: 2 });
    cleanups.push(() => fake.close(), () => test.sandbox.stop(), () => db.end());

    const launched = await test.platform.launchRun({ benchmarkId: 'outputs', modelId: 'tiny-base' }, 'outputs-1');
    const run = await waitForRun(test.platform, launched.id);
    expect(run.status).toBe('completed');
    expect(run.truncatedCount).toBe(1);
    expect(run.errorCount).toBe(0);
    expect(describeRun(run)).toContain('1 of 6 answers were cut by the token budget (finish_reason length)');

    const stored = await db.query<{ question_id: string; raw_output: string; raw_output_exact: string | null; finish_reason: string; score: number }>(
      'SELECT question_id, raw_output, raw_output_exact, finish_reason, score FROM sandbox.run_answers WHERE run_id = $1 AND answered_at IS NOT NULL ORDER BY position',
      [run.id],
    );
    expect(stored.rows.map((r) => r.question_id)).toEqual(items.map((i) => i.id));
    const row = (id: string) => stored.rows.find((r) => r.question_id === id)!;
    // Invalid UTF-8 arrives decoded to U+FFFD, stored as it is.
    expect(row('utf8')).toMatchObject({ raw_output: 'Tom \ufffd\ufffd\ufffd', raw_output_exact: null, score: 1 });
    // NUL and a lone surrogate are shown escaped, and the exact output is kept beside them.
    expect(row('nul').raw_output).toBe('Lily.\\u0000');
    expect(JSON.parse(row('nul').raw_output_exact!)).toBe('Lily.\u0000');
    expect(row('nul').score).toBe(1);
    expect(row('surrogate').raw_output).toBe('Ben \\ud800');
    expect(JSON.parse(row('surrogate').raw_output_exact!)).toBe('Ben \ud800');
    expect(row('huge').raw_output).toHaveLength(100_000);
    expect(row('length').finish_reason).toBe('length');
    // The stop sequence cut "cat END dog" to "cat ": no dog in the answer.
    expect(row('stop').score).toBe(0);
    const stopRequest = fake.generationRequests().find((r) => r.body?.prompt === 'Name a pet.');
    expect(stopRequest?.body?.stop).toEqual(['END']);

    const results = (await test.platform.listRunResults(run.id, { limit: 10 })).items;
    const shown = (id: string) => results.find((r) => r.questionId === id)!;
    expect(shown('nul').modelAnswer).toBe('Lily.\\u0000');
    expect(shown('huge').modelAnswer).toMatch(/^A{2000}… \(100000 characters\)$/);
    expect(shown('length').truncated).toBe(true);
    expect(results.filter((r) => r.truncated)).toHaveLength(1);
  });

  it('records an answer the database refuses as an error answer naming the database, not the endpoint', async () => {
    const fake = await startFakeOpenAi({ models: [{ id: 'tiny-base', chat_template: false }] });
    fake.answer = (prompt) => (prompt === 'Who came to tea?' ? 'Tom BOOM' : 'Lily');
    const test = await startTestSandbox({
      inference: { url: fake.url, benchmarkItems: async (id) => (id === 'two' ? items.slice(0, 2) : null), concurrency: 1, retryBaseDelayMs: 10, pollIntervalMs: 50 },
    });
    const db = new pg.Pool({ connectionString: test.databaseUrl, max: 2 });
    cleanups.push(() => fake.close(), () => test.sandbox.stop(), () => db.end());
    // A rule of this database that the first answer breaks.
    await db.query(`ALTER TABLE sandbox.run_answers ADD CONSTRAINT no_boom CHECK (raw_output IS NULL OR raw_output NOT LIKE '%BOOM%')`);

    const launched = await test.platform.launchRun({ benchmarkId: 'two', modelId: 'tiny-base' }, 'refused-1');
    const run = await waitForRun(test.platform, launched.id);
    expect(run).toMatchObject({ status: 'completed', errorCount: 1, score: 0.5 });
    const results = (await test.platform.listRunResults(run.id, { limit: 10 })).items;
    expect(results[0]!.error).toMatch(/^the database could not store the answer: .*no_boom/);
    expect(results[0]!.error).not.toMatch(/endpoint/);
    expect(results[1]).toMatchObject({ correct: true, error: null });
    expect(describeRun(run)).toContain('1 question could not be answered or stored');
  });
});
