// The whole loop with runs on the user's vLLM or SGLang server (their fakes in front of a real llama.cpp on stories260K):
// the baseline on the base model, a real PyTorch LoRA training, the adapter loaded on the server and named in every
// request of the trained model's run, reloaded once after the server forgot it, and the comparison in the thread.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { startLlamaServer, type LlamaServer } from '@verdict/platform/engines/llama-server';
import { pythonWithTorch, storiesFolders, TEST_ENGINE_THREADS } from '../kit/engines.js';
import { backendGenerator } from '../kit/fakes/inference-backend.js';
import { startFakeSglang, type FakeSglang } from '../kit/fakes/sglang.js';
import { startFakeVllm, type FakeVllm } from '../kit/fakes/vllm.js';
import { sandboxCounts, startHarness, type Harness } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';

const OWNER = 'UOWNER';
const MODEL = 'stories260K';
const BENCHMARK = '501';
const SEED = SEED_MESSAGE.replace('benchmark 104', `benchmark ${BENCHMARK}`)
  .replace('Qwen2.5-0.5B-Instruct', MODEL)
  .replace('run benchmark 104 again', `run benchmark ${BENCHMARK} again`);

const TORCH_PYTHON = pythonWithTorch();
if (!TORCH_PYTHON) {
  console.warn(
    '[served-adapters] SKIPPED 2 tests (the loop on vLLM; the loop on SGLang): no python with torch and numpy here ' +
      '(tried TRAINER_PYTHON, python3, /usr/bin/python3). Install it with `apt-get install -y python3-torch`.',
  );
}

type Fake = FakeVllm | FakeSglang;

describe.skipIf(!TORCH_PYTHON)('the loop with trained adapters served on the user\'s server', () => {
  let h: Harness | undefined;
  let backend: LlamaServer | undefined;
  let fake: Fake | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    await fake?.close();
    fake = undefined;
    await backend?.close();
    backend = undefined;
  });

  async function loop(start: (generator: ReturnType<typeof backendGenerator>) => Promise<Fake>, kind: 'vllm' | 'sglang') {
    const { modelsDir, benchmarksDir } = await storiesFolders(`verdict-${kind}-`);
    // The "GPU": llama.cpp over the same folder, so adapters the platform writes there are readable by the server.
    backend = await startLlamaServer({ modelsDir, threads: TEST_ENGINE_THREADS, parallel: 2 });
    fake = await start(backendGenerator({ url: backend.url, model: MODEL }));
    // The server restarts between the training and the run on its adapter: the run must reload it.
    fake.faults.restartBeforeAdapterRequest = true;
    // The first request (the model lookup) is rate limited: retried after its Retry-After.
    fake.faults.rateLimitNext = 1;
    fake.faults.retryAfterSeconds = 1;
    h = await startHarness({
      script: loopScript(),
      env: {
        INFERENCE_URL: fake.root,
        // vLLM's and SGLang's model lists do not say whether a model has a chat template; stories260K has none.
        INFERENCE_PROMPT_STYLE: 'completion',
        MODELS_DIR: modelsDir,
        BENCHMARKS_DIR: benchmarksDir,
        ENGINE_THREADS: String(TEST_ENGINE_THREADS),
        INFERENCE_CONCURRENCY: '2',
        TRAINER_PYTHON: TORCH_PYTHON!,
        TRAINING_LEARNING_RATE: '0.01',
        RECONCILE_OVERDUE_SECONDS: '3600',
      },
    });
    const mention = await h.mention({ user: OWNER, text: SEED });
    expect(mention.status).toBe(200);
    const verdict = await waitUntil(
      () => h!.posts(mention.ts).find((p) => JSON.stringify(p.blocks ?? []).includes('"type":"table"')),
      540_000,
      'the comparison message',
    );
    const posts = h.posts(mention.ts);
    expect(posts).toHaveLength(4);
    for (const post of posts) expect(post.text).toContain(`<@${OWNER}>`);
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });

    const runs = (await sql<{ model_id: string; status: string }>`select model_id, status from sandbox.runs order by seq`.execute(h.db.db)).rows;
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed']);
    const trained = runs[1]!.model_id;
    expect(trained).toMatch(/^ft\/stories260K-lora-\d+$/);
    const training = (await sql<{ adapter_path: string; trainer: string }>`select adapter_path, trainer from sandbox.trainings`.execute(h.db.db)).rows[0]!;
    expect(training.trainer).toMatch(/^PyTorch LoRA/);

    // The adapter was loaded on the server under the trained model's name, from the folder the trainer wrote.
    const loadRoute = kind === 'vllm' ? '/v1/load_lora_adapter' : '/load_lora_adapter';
    const loads = fake.requests.filter((r) => r.path === loadRoute && r.status === 200);
    expect(loads.length).toBe(2); // at completion of the training, and again after the server forgot it
    // vLLM and SGLang are sent the PEFT folder the trainer wrote beside the GGUF adapter.
    for (const load of loads) expect(load.body).toEqual({ lora_name: trained, lora_path: training.adapter_path.replace(/\.gguf$/, '.peft') });

    // Every question of the baseline went to the base; every question of the trained model's run named the adapter;
    // one more of each is the launch's check that the server really applies the adapter (a trained question asked of both).
    // (A request in flight when the server restarted may fail on the generator and be asked again: count the answered ones.)
    const answered = fake.completions.filter((c) => c.status === 200);
    const onBase = answered.filter((c) => c.adapter === null);
    const onAdapter = answered.filter((c) => c.adapter === trained);
    expect(onBase).toHaveLength(13);
    expect(onAdapter).toHaveLength(13);
    expect(answered).toHaveLength(26);
    if (kind === 'vllm') for (const c of onAdapter) expect(c.model).toBe(trained);
    else for (const c of onAdapter) expect(c.model).toBe(MODEL);
    // The restarted server refused the adapter in its own shape (once, or once per request then in flight), and it was reloaded once.
    const refused = fake.requests.filter((r) => r.path.endsWith('/completions') && r.status === (kind === 'vllm' ? 404 : 400));
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeLessThanOrEqual(2);

    // Training changed the answers: the trained model's stored outputs differ from the baseline's.
    const answers = (await sql<{ raw_output: string; score: number }>`
      select a.raw_output, a.score from sandbox.run_answers a join sandbox.runs r on r.id = a.run_id
       order by r.seq, a.position`.execute(h.db.db)).rows;
    const [first, second] = [answers.slice(0, 12), answers.slice(12)];
    expect(second.some((a, i) => a.raw_output !== first[i]!.raw_output)).toBe(true);
    expect(JSON.stringify(verdict.blocks)).toContain('Fixed');
    console.info(
      `[served-adapters] ${kind}: ${first.filter((a) => a.score >= 0.5).length}/12 before, ${second.filter((a) => a.score >= 0.5).length}/12 after`,
    );
    expect(h.slack.violations).toEqual([]);
  }

  it('vLLM: runtime LoRA loading, the adapter named as the model', async () => {
    await loop((generator) => startFakeVllm({ model: MODEL, generator }), 'vllm');
  }, 600_000);

  it('SGLang: /load_lora_adapter, the base named as the model and the adapter in lora_path', async () => {
    await loop((generator) => startFakeSglang({ model: MODEL, generator }), 'sglang');
  }, 600_000);
});
