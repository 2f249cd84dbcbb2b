// The Ray trainer against the fake Ray Jobs API, which runs the bundled trainer for real: one submission per training, progress from the logs, faults, cancel, reattach.
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { getLlama, LlamaLogLevel, type Token } from 'node-llama-cpp';
import { afterEach, describe, expect, it } from 'vitest';
import { tokenizeExamples } from '@verdict/platform/engines/trainer-examples';
import { rayMessage } from '@verdict/platform/engines/ray-jobs';
import { createRayTrainer, raySubmissionId, type RayTrainerOptions } from '@verdict/platform/engines/ray-trainer';
import { DEFAULT_LORA_HYPERPARAMETERS, type TrainerEvent, type TrainingExample, type TrainingSpec } from '@verdict/platform/engines/trainer';
import { pythonWithTorch, STORIES_MODEL_FILE } from '../kit/engines.js';
import { startFakeRay, type FakeRay } from '../kit/fakes/ray.js';
import { withStringMetadata } from '../platform/engines/fixtures/gguf-metadata.js';

const EXAMPLES = [
  { prompt: 'Once upon a time, there was a little', completion: ' dog' },
  { prompt: 'Tom had a big red', completion: ' ball' },
  { prompt: 'The sun was', completion: ' shining' },
  { prompt: 'Lily liked to play in the', completion: ' park' },
];
const TOKEN = 'ray-test-token-0123456789abcdef0123456789';

/** The python the cluster's nodes use here. */
const PYTHON = pythonWithTorch();
if (!PYTHON) {
  console.warn('[ray-trainer] SKIPPED the Ray trainer tests that run the bundled trainer: no python with torch and numpy here (tried TRAINER_PYTHON, python3, /usr/bin/python3); install it with `apt-get install -y python3-torch`');
}

interface Setup {
  root: string;
  shared: string;
  /** The shared folder as the fake cluster's nodes mount it (a symlink: another path, the same storage). */
  cluster: string;
}

let fake: FakeRay | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(): Promise<Setup> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'verdict-ray-'));
  const shared = path.join(root, 'shared');
  await mkdir(shared);
  const cluster = path.join(root, 'cluster-mount');
  await symlink(shared, cluster);
  return { root, shared, cluster };
}

function trainer(s: Setup, extra: Partial<RayTrainerOptions> = {}) {
  return createRayTrainer({
    address: fake!.address,
    sharedDir: s.shared,
    clusterSharedDir: s.cluster,
    headers: { Authorization: `Bearer ${TOKEN}` },
    python: PYTHON ?? 'python3',
    numCpus: 1,
    pollMs: 20,
    maxPollMs: 100,
    retryBaseMs: 5,
    ...extra,
  });
}

async function spec(s: Setup, jobId = 'tj_3001', extra: Partial<TrainingSpec> = {}, examples?: TrainingExample[]): Promise<TrainingSpec> {
  const workDir = path.join(s.root, 'training', jobId);
  await mkdir(workDir, { recursive: true });
  const modelsDir = path.join(s.root, 'models');
  await mkdir(path.join(modelsDir, 'adapters'), { recursive: true });
  const baseModelPath = path.join(modelsDir, 'stories260K.gguf');
  if (!existsSync(baseModelPath)) await copyFile(STORIES_MODEL_FILE, baseModelPath);
  const datasetPath = path.join(workDir, 'dataset.jsonl');
  await writeFile(datasetPath, (examples ?? EXAMPLES).map((e) => JSON.stringify(e)).join('\n') + '\n');
  return {
    jobId,
    baseModelPath,
    baseModelId: 'stories260K',
    datasetPath,
    adapterPath: path.join(modelsDir, 'adapters', `${jobId}.gguf`),
    workDir,
    hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 2, learningRate: 0.01 },
    threads: 1,
    ...extra,
  };
}

async function until<T>(check: () => T | undefined | false, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!PYTHON)('Ray trainer on the fake cluster', () => {
  it('submits one job (the trainer and the base model on the shared storage, paths as the cluster mounts them), follows its progress from the logs, and brings the adapter back', async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const s = await setup();
    const sp = await spec(s);
    const events: TrainerEvent[] = [];
    const t = trainer(s, { numGpus: 1, resources: { 'accelerator_type:T4': 1 } });
    expect(t.label).toBe(`PyTorch LoRA as Ray jobs on ${new URL(fake.address).host} (1 GPU a job)`);
    const job = await t.start(sp, (e) => events.push(e));
    const done = await job.done;
    expect(done).toMatchObject({ type: 'completed', adapterPath: sp.adapterPath });
    expect((await readFile(sp.adapterPath)).subarray(0, 4).toString()).toBe('GGUF');

    expect(fake.counts).toEqual({ submissions: 1, duplicates: 0, stops: 0 });
    const submit = fake.requests.find((r) => r.method === 'POST' && r.path === '/api/jobs/')!;
    const id = raySubmissionId(sp.jobId, 'stories260K', sp.hyperparameters, EXAMPLES);
    expect(submit.authorization).toBe(`Bearer ${TOKEN}`);
    expect(submit.body).toMatchObject({
      submission_id: id,
      entrypoint_num_gpus: 1,
      entrypoint_num_cpus: 1,
      entrypoint_resources: { 'accelerator_type:T4': 1 },
      metadata: { 'verdict-bot.training_id': sp.jobId },
      runtime_env: { env_vars: { OMP_NUM_THREADS: '1' } },
    });
    const entrypoint = (submit.body as { entrypoint: string }).entrypoint;
    expect(entrypoint).toMatch(new RegExp(`^${PYTHON} '${s.cluster}/verdict-bot/trainer/[0-9a-f]{12}/lora_train\\.py' --spec '${s.cluster}/verdict-bot/jobs/${id}/spec\\.json'$`));
    const jobSpec = JSON.parse(await readFile(path.join(s.shared, 'verdict-bot/jobs', id, 'spec.json'), 'utf8')) as Record<string, string>;
    expect(jobSpec.baseModelPath).toMatch(new RegExp(`^${s.cluster}/verdict-bot/models/stories260K-\\d+-\\d+\\.gguf$`));
    expect(jobSpec.adapterPath).toBe(`${s.cluster}/verdict-bot/jobs/${id}/adapter.gguf`);
    // The PEFT folder (vLLM, SGLang) is written beside it on the cluster and copied back beside the GGUF; the device is TRAINER_DEVICE's default.
    expect(jobSpec.peftAdapterDir).toBe(`${s.cluster}/verdict-bot/jobs/${id}/adapter.peft`);
    expect(jobSpec.device).toBe('auto');
    const peft = sp.adapterPath.replace(/\.gguf$/, '.peft');
    expect((await readdir(peft)).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(JSON.parse(await readFile(path.join(peft, 'adapter_config.json'), 'utf8'))).toMatchObject({ peft_type: 'LORA', r: sp.hyperparameters.rank });

    const progress = events.filter((e) => e.type === 'progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toMatchObject({ step: 2, totalSteps: 2 });
    expect(fake.jobs()[0]!.status).toBe('SUCCEEDED');

    // A second training of the same model reuses the trainer and the model on the shared storage.
    await (await t.start(await spec(s, 'tj_3002'), () => undefined)).done;
    expect(await readdir(path.join(s.shared, 'verdict-bot/models'))).toHaveLength(1);
    expect(await readdir(path.join(s.shared, 'verdict-bot/trainer'))).toHaveLength(1);
  }, 120_000);

  it("trains a chat model's examples in chat form, token for token as the local trainer renders them (one shared tokenization)", async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const s = await setup();
    const chatModel = path.join(s.root, 'stories-chat.gguf');
    const template = "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}Tom asked: {{ message['content'] }}\n{% else %}Lily said: {{ message['content'] }}\n{% endif %}{% endfor %}";
    await withStringMetadata(STORIES_MODEL_FILE, chatModel, 'tokenizer.chat_template', template);
    const examples: TrainingExample[] = EXAMPLES.map((e) => ({ ...e, completion: e.completion.trim(), style: 'chat' }));
    const sp = await spec(s, 'tj_chat', { baseModelPath: chatModel, baseModelId: 'stories-chat' }, examples);
    expect(await (await trainer(s).start(sp, () => undefined)).done).toMatchObject({ type: 'completed' });
    const id = raySubmissionId(sp.jobId, 'stories-chat', sp.hyperparameters, examples);
    const shipped = (await readFile(path.join(s.shared, 'verdict-bot/jobs', id, 'tokens.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { prompt: Token[]; completion: Token[] });
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    try {
      const vocab = await llama.loadModel({ modelPath: chatModel, vocabOnly: true });
      expect(shipped).toEqual(tokenizeExamples(vocab, examples));
      expect(vocab.detokenize(shipped[0]!.prompt)).toContain('Tom asked: Once upon a time, there was a little');
      expect(vocab.detokenize(shipped[0]!.completion)).toBe('dog\n');
    } finally {
      await llama.dispose();
    }
  }, 120_000);

  it('waits out 429 with Retry-After and 5xx; a submission whose answer was lost is looked up, never submitted twice', async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const s = await setup();
    fake.faults.rateLimitNext = 2;
    fake.faults.retryAfterSeconds = 0.2;
    fake.faults.loseSubmitAnswers = 1;
    const startedAt = Date.now();
    const job = await trainer(s).start(await spec(s), () => undefined);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(380);
    fake.faults.serverErrorNext = 3;
    expect((await job.done).type).toBe('completed');
    expect(fake.requests.filter((r) => r.status === 429)).toHaveLength(2);
    expect(fake.requests.filter((r) => r.status === 502)).toHaveLength(1);
    expect(fake.requests.filter((r) => r.status === 503)).toHaveLength(3);
    expect(fake.counts).toMatchObject({ submissions: 1, duplicates: 0 });
  }, 120_000);

  it("a job that fails on the cluster fails in Ray's words; a trainer that refuses the spec, in the trainer's", async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const s = await setup();
    fake.faults.killAtProgress = true;
    const killed = await (await trainer(s).start(await spec(s), () => undefined)).done;
    const id = fake.jobs()[0]!.submission_id;
    expect(killed.type).toBe('failed');
    expect(killed.type === 'failed' && killed.message).toMatch(new RegExp(`^Ray says: Job entrypoint command failed with exit code -9: .+ \\(job ${id}\\)$`));

    fake.faults.killAtProgress = false;
    const bogus = await spec(s, 'tj_3002', { hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, targetModules: ['attn_bogus'] } });
    const refused = await (await trainer(s).start(bogus, () => undefined)).done;
    expect(refused).toEqual({
      type: 'failed',
      message: expect.stringMatching(/^unknown target module\(s\) attn_bogus; choose from .+ \(Ray job verdict-bot-tj_3002-[0-9a-f]{12}\)$/),
    });
  }, 120_000);

  it('a job stopped on the cluster fails as stopped', async () => {
    fake = await startFakeRay({ authToken: TOKEN, stopWaitMs: 200 });
    const s = await setup();
    fake.faults.stopAtProgress = true;
    const done = await (await trainer(s).start(await spec(s), () => undefined)).done;
    expect(done).toEqual({ type: 'failed', message: `Ray says: the job was stopped (job ${fake.jobs()[0]!.submission_id})` });
  }, 120_000);

  it('cancel stops the job; detach leaves it running, and a restarted trainer reattaches to the job that finished meanwhile, never submitting twice', async () => {
    fake = await startFakeRay({ authToken: TOKEN, stopWaitMs: 200 });
    const s = await setup();
    fake.faults.pauseAtProgress = true;

    const kept = await spec(s, 'tj_kept');
    const first = await trainer(s).start(kept, () => undefined);
    await until(() => fake!.jobs()[0]?.paused);
    await first.detach!();
    expect((await first.done).type).toBe('failed');
    expect(fake.jobs()[0]!.status).toBe('RUNNING');
    // The job finishes while no platform follows it.
    fake.resume();
    await until(() => fake!.jobs()[0]!.status === 'SUCCEEDED');
    expect(existsSync(kept.adapterPath)).toBe(false);

    const events: TrainerEvent[] = [];
    const again = await trainer(s).start(kept, (e) => events.push(e));
    const done = await again.done;
    expect(done).toMatchObject({ type: 'completed', adapterPath: kept.adapterPath });
    expect(events.some((e) => e.type === 'progress')).toBe(true);
    expect(fake.counts).toMatchObject({ submissions: 1, duplicates: 0, stops: 0 });

    const cancelled = await trainer(s).start(await spec(s, 'tj_cancel'), () => undefined);
    await until(() => fake!.jobs()[1]?.paused);
    await cancelled.cancel();
    const outcome = await cancelled.done;
    expect(outcome.type === 'failed' && outcome.message).toMatch(/^the training was cancelled; Ray job verdict-bot-tj_cancel-[0-9a-f]{12} was stopped$/);
    expect(fake.counts.stops).toBe(1);
    await until(() => fake!.jobs()[1]!.status === 'STOPPED');
  }, 120_000);
});

describe('Ray trainer: refusals and the wire', () => {
  it("a wrong token is Ray's own words, naming the settings", async () => {
    fake = await startFakeRay({ authToken: TOKEN });
    const s = await setup();
    const done = await (await trainer(s, { headers: { Authorization: 'Bearer wrong' } }).start(await spec(s), () => undefined)).done;
    expect(done).toEqual({ type: 'failed', message: 'Ray says: Forbidden: Invalid authentication token (check RAY_AUTH_TOKEN or RAY_JOB_HEADERS)' });
    expect(fake.counts.submissions).toBe(0);
  });

  it('a cluster that cannot be reached is an error to retry later, naming the address', async () => {
    fake = await startFakeRay();
    const address = fake.address;
    await fake.close();
    fake = undefined;
    const s = await setup();
    const t = createRayTrainer({ address, sharedDir: s.shared, attempts: 2, retryBaseMs: 5 });
    await expect(t.start(await spec(s), () => undefined)).rejects.toThrow(`the Ray cluster's Jobs API at ${address} could not be reached`);
  });

  it('Ray refuses a second submission under one id (its 500 traceback, read as its words); the id changes with what is trained', async () => {
    fake = await startFakeRay();
    const body = { entrypoint: 'true', submission_id: 'verdict-bot-tj_1-abc' };
    const post = () => fetch(`${fake!.address}/api/jobs/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const first = await post();
    expect(await first.json()).toEqual({ job_id: body.submission_id, submission_id: body.submission_id });
    const second = await post();
    expect(second.status).toBe(500);
    expect(rayMessage(500, await second.text())).toBe(
      'Job with submission_id verdict-bot-tj_1-abc already exists. Please use a different submission_id.',
    );
    const a = raySubmissionId('tj_1', 'stories260K', DEFAULT_LORA_HYPERPARAMETERS, EXAMPLES);
    expect(raySubmissionId('tj_1', 'stories260K', DEFAULT_LORA_HYPERPARAMETERS, EXAMPLES)).toBe(a);
    expect(raySubmissionId('tj_1', 'stories260K', DEFAULT_LORA_HYPERPARAMETERS, EXAMPLES.slice(1))).not.toBe(a);
    expect(raySubmissionId('tj_1', 'stories260K', { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 5 }, EXAMPLES)).not.toBe(a);
    expect(a).toMatch(/^verdict-bot-tj_1-[0-9a-f]{12}$/);
  });
});
