// Run throughput through the platform vs a bare load generator sending the same requests to the same engine at the same concurrency.
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { startLlamaServer } from '@verdict/platform/engines/llama-server';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { startSandbox } from '@verdict/platform/sandbox/sandbox';
import { STORIES_MODEL_FILE } from '../test/kit/engines.js';
import { envNumber, fmt, median } from './stats.js';
import { startPostgres } from './postgres.js';
import { sleep } from '../test/kit/wait.js';

const QUESTIONS = envNumber('BENCH_ENGINE_QUESTIONS', 24);
const CONCURRENCY = envNumber('BENCH_ENGINE_CONCURRENCY', 2);
const THREADS = envNumber('BENCH_ENGINE_THREADS', 2);
const RUNS = envNumber('BENCH_ENGINE_RUNS', 4);
const MODEL = STORIES_MODEL_FILE;

const NAMES = ['Lily', 'Tom', 'Ben', 'Sue', 'Max', 'Mia', 'Sam', 'Anna', 'Tim', 'Lucy'];
const PLACES = ['the park', 'the sea', 'the forest', 'school', 'the garden', 'the shop'];
const items: BenchmarkItem[] = Array.from({ length: QUESTIONS }, (_, i) => ({
  id: `story-${i + 1}`,
  question: `Once upon a time, ${NAMES[i % NAMES.length]} went to ${PLACES[i % PLACES.length]} and`,
  answer: 'saw a big red ball. She was very happy and wanted to play with it all day long.',
  scorer: 'contains',
}));

interface Sample {
  platformQps: number;
  bareQps: number;
}

async function main(): Promise<void> {
  const postgres = await startPostgres();
  const modelsDir = await mkdtemp(path.join(os.tmpdir(), 'bench-models-'));
  await copyFile(MODEL, path.join(modelsDir, 'stories260K.gguf'));
  const server = await startLlamaServer({ modelsDir, threads: THREADS, parallel: CONCURRENCY });
  const samples: Sample[] = [];
  try {
    console.log(`engine: ${server.label}; ${QUESTIONS} questions, concurrency ${CONCURRENCY}, ${RUNS} rounds (platform then bare, alternating order)`);
    for (let round = 0; round < RUNS; round++) {
      const databaseUrl = await postgres.createDatabase('engine_bench');
      const sandbox = await startSandbox({
        databaseUrl,
        startingBalance: 1_000_000,
        inference: { url: server.url, concurrency: CONCURRENCY, benchmarkItems: async () => items },
      });
      const platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token });
      const db = new pg.Pool({ connectionString: databaseUrl, max: 1 });
      try {
        // Warm-up: the model loaded and every sequence slot evaluated before anything is timed.
        await Promise.all(Array.from({ length: CONCURRENCY * 2 }, (_, i) => complete(server.url, items[i % items.length]!.question, 16)));

        const platformFirst = round % 2 === 0;
        let requests: Array<{ prompt: string; maxTokens: number }> = [];
        let platformMs = 0;
        const runPlatform = async () => {
          const started = performance.now();
          const run = await platform.launchRun({ benchmarkId: 'stories', modelId: 'stories260K' }, `bench-${round}`);
          for (;;) {
            const seen = await platform.getRun(run.id);
            if (seen.status === 'completed' || seen.status === 'failed') {
              if (seen.status === 'failed') throw new Error(`run failed: ${seen.errorMessage}`);
              break;
            }
            // Coarse on purpose: this process also hosts the engine, and tight polling competes with it for CPU.
            await sleep(200);
          }
          platformMs = performance.now() - started;
          const rows = await db.query<{ prompt: string; max_tokens: number }>(
            'SELECT prompt, max_tokens FROM sandbox.run_answers WHERE run_id = $1 ORDER BY position',
            [run.id],
          );
          requests = rows.rows.map((r) => ({ prompt: r.prompt, maxTokens: r.max_tokens }));
        };
        let bareMs = 0;
        const runBare = async () => {
          const work = requests.length > 0 ? requests : items.map((i) => ({ prompt: i.question, maxTokens: budgetGuess }));
          const started = performance.now();
          let next = 0;
          await Promise.all(
            Array.from({ length: CONCURRENCY }, async () => {
              while (next < work.length) {
                const job = work[next++]!;
                await complete(server.url, job.prompt, job.maxTokens);
              }
            }),
          );
          bareMs = performance.now() - started;
        };
        // The bare generator needs the platform's budgets; when it goes first it uses the budget the platform computes.
        const budgetGuess = await platformBudget(server.url);
        if (platformFirst) {
          await runPlatform();
          await runBare();
        } else {
          await runBare();
          await runPlatform();
        }
        const sample = { platformQps: (QUESTIONS / platformMs) * 1000, bareQps: (QUESTIONS / bareMs) * 1000 };
        samples.push(sample);
        console.log(
          `round ${round + 1}: platform ${fmt(sample.platformQps, 2)} q/s (${fmt(platformMs / 1000, 2)} s), bare ${fmt(sample.bareQps, 2)} q/s (${fmt(bareMs / 1000, 2)} s), ratio ${fmt(sample.platformQps / sample.bareQps, 3)}`,
        );
      } finally {
        await db.end();
        await sandbox.stop();
      }
    }
    const ratios = samples.map((s) => s.platformQps / s.bareQps);
    console.log(
      `\nplatform ${fmt(median(samples.map((s) => s.platformQps)), 2)} q/s vs bare ${fmt(median(samples.map((s) => s.bareQps)), 2)} q/s: ` +
        `median ratio ${fmt(median(ratios), 3)} [${ratios.map((r) => fmt(r, 3)).join(', ')}] (target >= 0.9: ${median(ratios) >= 0.9 ? 'met' : 'missed'})`,
    );
  } finally {
    await server.close();
    await rm(modelsDir, { recursive: true, force: true });
    await postgres.stop();
  }
}

/** The generation budget the platform gives these questions (same answer for every item). */
async function platformBudget(url: string): Promise<number> {
  const { generationBudget } = await import('@verdict/platform/engines/inference');
  const response = await request(`${url}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'stories260K', prompt: items[0]!.answer, add_special_tokens: false }),
  });
  const body = (await response.body.json()) as { count: number };
  return generationBudget(body.count);
}

async function complete(url: string, prompt: string, maxTokens: number): Promise<void> {
  const response = await request(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'stories260K', prompt, max_tokens: maxTokens, temperature: 0, seed: 0 }),
  });
  if (response.statusCode !== 200) throw new Error(`engine answered ${response.statusCode}: ${await response.body.text()}`);
  await response.body.json();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
