// Our model ids to Together's model names: TOGETHER_MODEL_MAP, Together's list of fine-tunable models, a clear refusal for an unknown one.
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadEngineConfig } from '@verdict/platform/config';
import { createTogetherTrainer } from '@verdict/platform/engines/together-trainer';
import { DEFAULT_LORA_HYPERPARAMETERS } from '@verdict/platform/engines/trainer';
import { startFakeTogether, type FakeTogether } from '../kit/fakes/together.js';

const TOGETHER_MODEL = 'Qwen/Qwen2.5-0.5B-Instruct';
const LOCAL_MODEL = 'qwen2.5-0.5b-instruct-q8_0';
const EXAMPLES = [{ prompt: 'Capital of France?', completion: 'Paris' }];
const hyperparameters = { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 1 };

let fake: FakeTogether | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const trainer = (f: FakeTogether, modelMap?: Record<string, string>) =>
  createTogetherTrainer({ apiKey: f.apiKey, apiUrl: f.apiUrl, pollMs: 5, maxPollMs: 20, retryBaseMs: 5, ...(modelMap ? { modelMap } : {}) });

describe("Together's model names", () => {
  it('a mapped local id is quoted and launched under its Together name', async () => {
    fake = await startFakeTogether({ models: [TOGETHER_MODEL] });
    const t = trainer(fake, { [LOCAL_MODEL]: TOGETHER_MODEL });
    const quote = await t.estimate!({ examples: EXAMPLES, baseModelId: LOCAL_MODEL, hyperparameters });
    expect(quote.priceCredits).toBeGreaterThan(0);
    const workDir = await mkdtemp(path.join(os.tmpdir(), 'together-map-'));
    const datasetPath = path.join(workDir, 'dataset.jsonl');
    await writeFile(datasetPath, EXAMPLES.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const job = await t.start(
      { jobId: 'trn_map1', baseModelPath: '', baseModelId: LOCAL_MODEL, datasetPath, adapterPath: '', workDir, hyperparameters, threads: 1 },
      () => undefined,
    );
    expect((await job.done).type).toBe('completed');
    const sent = fake.requests.filter((r) => r.method === 'POST' && (r.path === '/v1/fine-tunes' || r.path === '/v1/fine-tunes/estimate-price'));
    expect(sent.map((r) => (r.body as { model: string }).model)).toEqual([TOGETHER_MODEL, TOGETHER_MODEL]);
  });

  it('an id Together does not fine-tune is refused before anything is uploaded, naming the variable to map it with', async () => {
    fake = await startFakeTogether({ models: [TOGETHER_MODEL] });
    const error = await trainer(fake)
      .estimate!({ examples: EXAMPLES, baseModelId: LOCAL_MODEL, hyperparameters })
      .then(() => null, (e: unknown) => e as Error);
    expect(error?.message).toBe(
      `Together cannot fine-tune ${LOCAL_MODEL}: it is not among the models Together fine-tunes (for example ${TOGETHER_MODEL}); ` +
        `if it is one of them under another name, map it with TOGETHER_MODEL_MAP={"${LOCAL_MODEL}":"<Together model name>"}`,
    );
    expect(fake.counts.uploads).toBe(0);
    expect(fake.counts.estimates).toBe(0);
    // A map to a name Together does not have says so too.
    const mapped = await trainer(fake, { [LOCAL_MODEL]: 'Qwen/Qwen9-Imaginary' })
      .estimate!({ examples: EXAMPLES, baseModelId: LOCAL_MODEL, hyperparameters })
      .then(() => null, (e: unknown) => e as Error);
    expect(mapped?.message).toMatch(/^Together cannot fine-tune Qwen\/Qwen9-Imaginary \(TOGETHER_MODEL_MAP's name for qwen2\.5-0\.5b-instruct-q8_0\)/);
  });

  it('when Together cannot list its fine-tunable models (5xx after retries), the name is not checked and Together judges the launch', async () => {
    fake = await startFakeTogether({ models: [TOGETHER_MODEL] });
    fake.faults.serverErrorNext = 5;
    const quote = await trainer(fake).estimate!({ examples: EXAMPLES, baseModelId: TOGETHER_MODEL, hyperparameters });
    expect(quote.priceCredits).toBeGreaterThan(0);
  });

  it('TOGETHER_MODEL_MAP is read from the environment; a bad value names the variable', () => {
    expect(loadEngineConfig({ TOGETHER_MODEL_MAP: `{"${LOCAL_MODEL}":"${TOGETHER_MODEL}"}` }).togetherModelMap).toEqual({ [LOCAL_MODEL]: TOGETHER_MODEL });
    expect(loadEngineConfig({}).togetherModelMap).toEqual({});
    for (const bad of ['not json', '["a"]', '{"a": 3}']) {
      expect(() => loadEngineConfig({ TOGETHER_MODEL_MAP: bad })).toThrow(/TOGETHER_MODEL_MAP must be a JSON object from our model ids to Together model names/);
    }
  });
});
