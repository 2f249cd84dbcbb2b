// The Together trainer against the fake Together API: upload, estimate, one job per training, polling, faults, cancel, reattach.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTogetherTrainer, togetherSuffix } from '@verdict/platform/engines/together-trainer';
import { DEFAULT_LORA_HYPERPARAMETERS, type TrainerEvent, type TrainingExample, type TrainingSpec } from '@verdict/platform/engines/trainer';
import { buildTrainingExamples } from '@verdict/platform/engines/training-dataset';
import { startFakeTogether, type FakeTogether } from '../kit/fakes/together.js';

const MODEL = 'meta-llama/Llama-3.2-1B-Instruct';
const EXAMPLES = [
  { prompt: 'What is 2+2?', completion: '4' },
  { prompt: 'Capital of France?', completion: 'Paris' },
];

let fake: FakeTogether;
beforeEach(async () => {
  fake = await startFakeTogether({ models: [MODEL] });
});
afterEach(async () => {
  await fake.close();
});

function trainer(extra: Partial<Parameters<typeof createTogetherTrainer>[0]> = {}) {
  return createTogetherTrainer({ apiKey: fake.apiKey, apiUrl: fake.apiUrl, pollMs: 5, maxPollMs: 20, retryBaseMs: 5, ...extra });
}

async function spec(jobId = 'tj_abc123', examples: TrainingExample[] = EXAMPLES): Promise<TrainingSpec> {
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'together-'));
  const datasetPath = path.join(workDir, 'dataset.jsonl');
  await writeFile(datasetPath, examples.map((e) => JSON.stringify(e)).join('\n') + '\n');
  return {
    jobId,
    baseModelPath: '',
    baseModelId: MODEL,
    datasetPath,
    adapterPath: '',
    workDir,
    hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 2, learningRate: 1e-4 },
    threads: 1,
  };
}

describe('Together trainer', () => {
  it('uploads the dataset as chat messages, creates one LoRA job with our suffix, follows it to the output model', async () => {
    const events: TrainerEvent[] = [];
    const job = await trainer().start(await spec(), (e) => events.push(e));
    const done = await job.done;
    expect(done).toMatchObject({ type: 'completed', adapterPath: '' });
    const created = fake.jobs()[0]!;
    expect(done.type === 'completed' && done.servedModel).toBe(created.output_name);
    expect(fake.counts.creations).toBe(1);
    const create = fake.requests.find((r) => r.method === 'POST' && r.path === '/v1/fine-tunes')!.body as Record<string, unknown>;
    expect(create).toMatchObject({
      model: MODEL,
      n_epochs: 2,
      learning_rate: 1e-4,
      suffix: togetherSuffix('tj_abc123'),
      training_type: { type: 'Lora', lora_r: 4, lora_alpha: 8, lora_trainable_modules: 'q_proj,v_proj,o_proj,down_proj' },
    });
    const lines = fake.files()[0]!.content.trim().split('\n').map((l) => JSON.parse(l) as unknown);
    expect(lines[0]).toEqual({ messages: [{ role: 'user', content: 'What is 2+2?' }, { role: 'assistant', content: '4' }] });
    expect(events.some((e) => e.type === 'progress' && e.step === e.totalSteps)).toBe(true);
  });

  it("uploads each example in the form its run asked it: a chat run's answer as the whole assistant turn, a completion run's as the continuation", async () => {
    const items = [{ id: 'q1', question: 'Lily liked to play in the', answer: 'park' }];
    const examples = [...buildTrainingExamples(items, 1, 'chat'), ...buildTrainingExamples(items, 1, 'completion')];
    await (await trainer().start(await spec('tj_styles', examples), () => undefined)).done;
    expect(fake.files()[0]!.content.trim().split('\n').map((l) => JSON.parse(l) as unknown)).toEqual([
      { messages: [{ role: 'user', content: 'Lily liked to play in the' }, { role: 'assistant', content: 'park' }] },
      { prompt: 'Lily liked to play in the', completion: ' park\n' },
    ]);
  });

  it('uploads in Together instruction format for completion-style models', async () => {
    await (await trainer({ promptStyle: 'completion' }).start(await spec(), () => undefined)).done;
    expect(JSON.parse(fake.files()[0]!.content.split('\n')[0]!)).toEqual({ prompt: 'What is 2+2?', completion: '4' });
  });

  it('estimates through estimate-price on the uploaded file, and the launch reuses that upload', async () => {
    const t = trainer({ creditsPerDollar: 10 });
    const quote = await t.estimate!({ examples: EXAMPLES, baseModelId: MODEL, hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 2 } });
    const estimate = fake.requests.find((r) => r.path === '/v1/fine-tunes/estimate-price')!;
    expect(estimate.body).toMatchObject({ model: MODEL, n_epochs: 2, training_file: fake.files()[0]!.id });
    const response = await fetch(`${fake.apiUrl}/fine-tunes/estimate-price`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(estimate.body),
    });
    const price = (await response.json()) as { estimated_total_price: number; estimated_train_token_count: number };
    expect(quote.priceCredits).toBe(Math.max(0.01, Math.round(price.estimated_total_price * 10 * 100) / 100));
    expect(quote.trainedTokens).toBe(price.estimated_train_token_count);
    await (await t.start(await spec(), () => undefined)).done;
    expect(fake.counts.uploads).toBe(1);
  });

  it('refuses in Together\'s words when the estimate exceeds the balance, and a refused creation fails the job', async () => {
    fake.setBalance(0);
    await expect(
      trainer().estimate!({ examples: EXAMPLES, baseModelId: MODEL, hyperparameters: DEFAULT_LORA_HYPERPARAMETERS }),
    ).rejects.toThrow(/^Together says: insufficient balance/);
    const done = await (await trainer().start(await spec(), () => undefined)).done;
    expect(done).toEqual({ type: 'failed', message: 'Together says: insufficient balance' });
    expect(fake.counts.creations).toBe(0);
  });

  it('waits out 429 with Retry-After and retries 5xx, creating the job once', async () => {
    fake.faults.rateLimitNext = 2;
    fake.faults.retryAfterSeconds = 0.2;
    const startedAt = Date.now();
    const job = await trainer().start(await spec(), () => undefined);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(380);
    fake.faults.serverErrorNext = 3;
    expect((await job.done).type).toBe('completed');
    expect(fake.requests.filter((r) => r.status === 429)).toHaveLength(2);
    expect(fake.requests.filter((r) => r.status === 503)).toHaveLength(3);
    expect(fake.counts.creations).toBe(1);
  });

  it('gives up after its attempts on a Together that keeps failing, naming it', async () => {
    fake.faults.serverErrorNext = 100;
    await expect(trainer({ attempts: 3 }).start(await spec(), () => undefined)).rejects.toThrow(
      'Together says: The server is overloaded (HTTP 503)',
    );
  });

  it('a job that fails on Together fails with its error event', async () => {
    fake.faults.failJobs = true;
    const done = await (await trainer().start(await spec(), () => undefined)).done;
    expect(done).toEqual({ type: 'failed', message: `Together says: CUDA out of memory: the batch does not fit on the GPU (fine-tune ${fake.jobs()[0]!.id})` });
  });

  it('a job Together cancels fails as cancelled', async () => {
    fake.faults.cancelJobs = true;
    const done = await (await trainer().start(await spec(), () => undefined)).done;
    expect(done).toEqual({ type: 'failed', message: `Together says: the fine-tuning job was cancelled (fine-tune ${fake.jobs()[0]!.id})` });
  });

  it('cancel cancels the Together job; detach leaves it running', async () => {
    fake.faults.holdJobs = true;
    const first = await trainer().start(await spec('tj_one'), () => undefined);
    await first.cancel();
    expect((await first.done).type).toBe('failed');
    expect(fake.counts.cancels).toBe(1);
    expect(fake.jobs()[0]!.status).toBe('cancel_requested');
    const second = await trainer().start(await spec('tj_two'), () => undefined);
    await second.detach!();
    expect((await second.done).type).toBe('failed');
    expect(fake.counts.cancels).toBe(1);
  });

  it('a restarted trainer reattaches by the stored id or by the suffix, never creating twice', async () => {
    fake.faults.holdJobs = true;
    const s = await spec('tj_restart');
    const first = await trainer().start(s, () => undefined);
    await first.detach!();
    await first.done;
    const state = JSON.parse(await readFile(path.join(s.workDir, 'together.json'), 'utf8')) as { fineTuneId: string };
    expect(state.fineTuneId).toBe(fake.jobs()[0]!.id);
    // A crash after the create call but before the id was stored: found again by its suffix.
    await writeFile(path.join(s.workDir, 'together.json'), JSON.stringify({ submissionId: s.jobId, suffix: togetherSuffix(s.jobId) }));
    fake.faults.holdJobs = false;
    const again = await trainer().start(s, () => undefined);
    expect((await again.done).type).toBe('completed');
    expect(fake.counts.creations).toBe(1);
  });

  it('a wrong API key is Together\'s own message', async () => {
    const done = await (await trainer({ apiKey: 'wrong' }).start(await spec(), () => undefined)).done;
    expect(done).toEqual({ type: 'failed', message: 'Together says: Invalid API key provided' });
  });
});
