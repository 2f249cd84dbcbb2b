// The bot's whole loop with trainings on the fake Ray cluster: one mention, runs on the embedded llama.cpp server, the training one Ray job running the bundled trainer, the verdict.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { pythonWithTorch, rayStoriesFolders, TEST_ENGINE_THREADS } from '../kit/engines.js';
import { sandboxCounts, startHarness, type Harness } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';
import { startFakeRay, type FakeRay } from '../kit/fakes/ray.js';

const OWNER = 'UOWNER';
const MODEL = 'stories260K';
const BENCHMARK = '501';
const SEED = SEED_MESSAGE.replace('benchmark 104', `benchmark ${BENCHMARK}`)
  .replace('Qwen2.5-0.5B-Instruct', MODEL)
  .replace('run benchmark 104 again', `run benchmark ${BENCHMARK} again`);

const PYTHON = pythonWithTorch();
if (!PYTHON) {
  console.warn(
    `[ray-e2e] SKIPPED the bot's loop on the fake Ray cluster: no python with torch and numpy here (tried TRAINER_PYTHON, python3, /usr/bin/python3); install it with \`apt-get install -y python3-torch\``,
  );
}

describe.skipIf(!PYTHON)("the bot's loop with trainings on Ray", () => {
  let h: Harness | undefined;
  let fake: FakeRay | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    await fake?.close();
    fake = undefined;
  });

  it('one mention: base run, one Ray job trains the adapter, the run on the trained model, the verdict', async () => {
    fake = await startFakeRay();
    const { modelsDir, benchmarksDir, shared, clusterMount } = await rayStoriesFolders('verdict-ray-e2e-');
    h = await startHarness({
      script: loopScript(),
      env: {
        MODELS_DIR: modelsDir,
        BENCHMARKS_DIR: benchmarksDir,
        ENGINE_THREADS: String(TEST_ENGINE_THREADS),
        INFERENCE_CONCURRENCY: '2',
        TRAINING_LEARNING_RATE: '0.01',
        RECONCILE_OVERDUE_SECONDS: '3600',
        RAY_ADDRESS: fake.address,
        RAY_SHARED_DIR: shared,
        RAY_CLUSTER_SHARED_DIR: clusterMount,
        RAY_PYTHON: PYTHON!,
        RAY_NUM_GPUS: '0',
        RAY_NUM_CPUS: '2',
        RAY_POLL_MS: '100',
        RAY_MAX_POLL_MS: '500',
      },
    });
    const mention = await h.mention({ user: OWNER, text: SEED });
    expect(mention.status).toBe(200);
    const verdict = await waitUntil(
      () => h!.posts(mention.ts).find((p) => JSON.stringify(p.blocks ?? []).includes('"type":"table"')),
      840_000,
      'the comparison message',
    );
    const posts = h.posts(mention.ts);
    expect(posts).toHaveLength(4);
    for (const post of posts) expect(post.text).toContain(`<@${OWNER}>`);
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });

    const training = (
      await sql<{ id: string; status: string; trainer: string; adapter_path: string; produced_model_id: string }>`
        select id, status, trainer, adapter_path, produced_model_id from sandbox.trainings`.execute(h.db.db)
    ).rows[0]!;
    expect(training.status).toBe('completed');
    expect(training.trainer).toBe(`PyTorch LoRA as Ray jobs on ${new URL(fake.address).host} (2 CPUs a job)`);
    expect(training.adapter_path).toBe(path.join(modelsDir, 'adapters', `${training.id}.gguf`));
    expect((await stat(training.adapter_path)).size).toBeGreaterThan(0);
    expect(fake.counts).toEqual({ submissions: 1, duplicates: 0, stops: 0 });
    const job = fake.jobs()[0]!;
    expect(job).toMatchObject({ status: 'SUCCEEDED', entrypoint_num_cpus: 2, entrypoint_num_gpus: null, metadata: { 'verdict-bot.training_id': training.id } });

    const runs = (await sql<{ model_id: string; status: string; score: number }>`select model_id, status, score from sandbox.runs order by seq`.execute(h.db.db)).rows;
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed']);
    expect(runs[1]!.model_id).toBe(training.produced_model_id);
    expect(runs[1]!.score).toBeGreaterThan(runs[0]!.score);
    expect(JSON.stringify(verdict.blocks)).toContain('Fixed');
    expect(h.slack.violations).toEqual([]);
    console.info(`[ray-e2e] ${runs[0]!.score} -> ${runs[1]!.score}; Ray submissions ${fake.counts.submissions}`);
  }, 900_000);
});
