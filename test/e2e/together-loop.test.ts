// The whole loop through the bot on Together (its fake): a mention, the baseline on Together's inference, a Together
// LoRA fine-tune priced by estimate-price, the run on the fine-tuned model under Together's output name, the comparison in Slack.
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTogether, type FakeTogether } from '../kit/fakes/together.js';
import { sandboxCounts, startHarness, type Harness } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';

const OWNER = 'UOWNER';
const MODEL = 'togethercomputer/Tiny-Stories-Instruct';
const BENCHMARK = '501';
const BENCHMARK_FILE = path.resolve(import.meta.dirname, 'fixtures/benchmarks/501.jsonl');
const SEED = SEED_MESSAGE.replace('benchmark 104', `benchmark ${BENCHMARK}`)
  .replace('Qwen2.5-0.5B-Instruct', MODEL)
  .replace('run benchmark 104 again', `run benchmark ${BENCHMARK} again`);

const QUESTIONS = readFileSync(BENCHMARK_FILE, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as { id: string; question: string; answer: string });

/** The base model knows the first four stories' words and not the others. */
function baseAnswer(_model: string, prompt: string): string {
  const index = QUESTIONS.findIndex((q) => prompt.includes(q.question));
  return index >= 0 && index < 4 ? QUESTIONS[index]!.answer : 'something else';
}

describe('the loop on Together through the bot', () => {
  let h: Harness | undefined;
  let fake: FakeTogether | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    await fake?.close();
    fake = undefined;
  });

  it('mention -> baseline on Together -> Together fine-tune -> run on the fine-tuned model -> the comparison, with a rate limit and a 5xx on the way', async () => {
    fake = await startFakeTogether({ models: [MODEL], answer: baseAnswer, dollarsPer1kTokens: 2 });
    const root = await mkdtemp(path.join(os.tmpdir(), 'verdict-together-loop-'));
    const benchmarksDir = path.join(root, 'benchmarks');
    await mkdir(benchmarksDir);
    await copyFile(BENCHMARK_FILE, path.join(benchmarksDir, `${BENCHMARK}.jsonl`));
    h = await startHarness({
      script: loopScript(),
      env: {
        BENCHMARKS_DIR: benchmarksDir,
        TOGETHER_API_KEY: fake.apiKey,
        TOGETHER_API_URL: fake.apiUrl,
        TOGETHER_POLL_MS: '50',
        TOGETHER_MAX_POLL_MS: '200',
        INFERENCE_CONCURRENCY: '2',
      },
    });
    fake.faults.rateLimitNext = 1;
    fake.faults.retryAfterSeconds = 1;
    fake.faults.serverErrorNext = 1;
    const mention = await h.mention({ user: OWNER, text: SEED });
    expect(mention.status).toBe(200);
    const verdict = await waitUntil(
      () => h!.posts(mention.ts).find((p) => JSON.stringify(p.blocks ?? []).includes('"type":"table"')),
      120_000,
      'the comparison message',
    );
    const posts = h.posts(mention.ts);
    expect(posts).toHaveLength(4);
    for (const post of posts) expect(post.text).toContain(`<@${OWNER}>`);
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });

    // One fine-tune, of the model the user named, priced by Together's estimate.
    expect(fake.counts.creations).toBe(1);
    const job = fake.jobs()[0]!;
    expect(job.model).toBe(MODEL);
    expect(job.status).toBe('completed');
    const training = (await sql<{ price: string; charged: string; produced_model_id: string; trainer: string }>`
      select price, charged, produced_model_id, trainer from sandbox.trainings`.execute(h.db.db)).rows[0]!;
    expect(training.trainer).toMatch(/^Together fine-tuning/);
    const quoted = fake.requests.filter((r) => r.path === '/v1/fine-tunes/estimate-price' && r.status === 200).at(-1)!;
    const estimate = await fetch(`${fake.apiUrl}/fine-tunes/estimate-price`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(quoted.body),
    });
    const dollars = ((await estimate.json()) as { estimated_total_price: number }).estimated_total_price;
    expect(Number(training.price)).toBe(Math.max(0.01, Math.round(dollars * 100) / 100));
    expect(Number(training.charged)).toBe(Number(training.price));
    const launchPost = posts.find((p) => /LoRA training/i.test(p.text))!;
    expect(launchPost.text).toContain(Number(training.price).toFixed(2));

    // The baseline asked the base model, the second run Together's output model, each question once
    // per run; and once more each, one trained question, for the check before the second run that
    // the output model answers otherwise than its base (a model served as its base is refused).
    const chats = fake.requests.filter((r) => r.path === '/v1/chat/completions' && r.status === 200).map((r) => (r.body as { model: string }).model);
    expect(chats.filter((m) => m === MODEL)).toHaveLength(QUESTIONS.length + 1);
    expect(chats.filter((m) => m === job.output_name)).toHaveLength(QUESTIONS.length + 1);
    const runs = (await sql<{ model_id: string; score: number }>`select model_id, score from sandbox.runs order by seq`.execute(h.db.db)).rows;
    expect(runs[1]!.model_id).toBe(training.produced_model_id);
    expect(runs[0]!.score).toBeCloseTo(4 / QUESTIONS.length, 4);
    // Trained on every failed question: the fine-tuned model answers them all.
    expect(runs[1]!.score).toBe(1);

    const blocks = JSON.stringify(verdict.blocks);
    expect(blocks).toContain('Fixed');
    expect(blocks).toContain(`${Number(training.charged).toFixed(2)} cr`);
    expect(h.slack.violations).toEqual([]);
    console.info(`[together-loop] base ${runs[0]!.score} -> fine-tuned ${runs[1]!.score}; training ${training.price} credits ($${dollars}); fine-tunes created ${fake.counts.creations}`);
  }, 180_000);

  it('a fine-tune Together fails is reported in the thread in its words, and nothing is charged', async () => {
    fake = await startFakeTogether({ models: [MODEL], answer: baseAnswer });
    fake.faults.failJobs = true;
    const root = await mkdtemp(path.join(os.tmpdir(), 'verdict-together-loop-'));
    const benchmarksDir = path.join(root, 'benchmarks');
    await mkdir(benchmarksDir);
    await copyFile(BENCHMARK_FILE, path.join(benchmarksDir, `${BENCHMARK}.jsonl`));
    h = await startHarness({
      script: loopScript(),
      env: { BENCHMARKS_DIR: benchmarksDir, TOGETHER_API_KEY: fake.apiKey, TOGETHER_API_URL: fake.apiUrl, TOGETHER_POLL_MS: '50', TOGETHER_MAX_POLL_MS: '200' },
    });
    const mention = await h.mention({ user: OWNER, text: SEED });
    const failed = await waitUntil(
      () => h!.posts(mention.ts).find((p) => p.text.includes('CUDA out of memory')),
      120_000,
      'the training failure in the thread',
    );
    expect(failed.text).toContain(`<@${OWNER}>`);
    const training = (await sql<{ status: string; charged: string }>`select status, charged from sandbox.trainings`.execute(h.db.db)).rows[0]!;
    expect(training.status).toBe('failed');
    expect(Number(training.charged)).toBe(0);
    expect(fake.counts.creations).toBe(1);
  }, 180_000);
});
