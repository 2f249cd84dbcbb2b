// Engine configuration: defaults, one clear message naming a bad variable, and which engine runs go to.
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadEngineConfig } from '@verdict/platform/config';
import { ConfigError, loadConfig } from '../../src/config.js';
import { inferenceFromConfig } from '@verdict/platform/engines/engine-setup';

const base = { SLACK_BOT_TOKEN: 'xoxb-test-token', SLACK_SIGNING_SECRET: 'signing-secret', ANTHROPIC_API_KEY: 'test-api-key' };

function messageOf(env: Record<string, string>): string {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a configuration error');
}

describe('engine configuration', () => {
  it('defaults to simulated runs, the cores as threads, 4 questions in flight, chat style', () => {
    const { engines } = loadConfig(base);
    expect(engines).toMatchObject({
      modelsDir: undefined,
      inferenceUrl: undefined,
      promptStyle: 'chat',
      threads: os.availableParallelism(),
      concurrency: 4,
      timeoutMs: 120_000,
      runCreditsPer1kTokens: 0.1,
    });
    expect(inferenceFromConfig(engines)).toBeUndefined();
  });

  it('sends runs to INFERENCE_URL when set, else to the embedded server over MODELS_DIR', () => {
    const dir = os.tmpdir();
    const both = loadConfig({ ...base, MODELS_DIR: dir, INFERENCE_URL: 'http://127.0.0.1:8000/v1', INFERENCE_API_KEY: 'sk-x', ENGINE_THREADS: '2', INFERENCE_CONCURRENCY: '3', INFERENCE_PROMPT_STYLE: 'completion' });
    expect(inferenceFromConfig(both.engines)).toMatchObject({ url: 'http://127.0.0.1:8000/v1', apiKey: 'sk-x', promptStyle: 'completion', concurrency: 3, threads: 2 });
    const embedded = loadConfig({ ...base, MODELS_DIR: dir });
    expect(inferenceFromConfig(embedded.engines)).toMatchObject({ modelsDir: dir });
    expect(inferenceFromConfig(embedded.engines)).not.toHaveProperty('url');
  });

  it('stops with one line naming the variable', () => {
    expect(messageOf({ MODELS_DIR: '/no/such/folder' })).toBe('Configuration error: MODELS_DIR must be an existing folder of GGUF model files');
    expect(messageOf({ INFERENCE_URL: 'not a url' })).toMatch(/^Configuration error: INFERENCE_URL must be an absolute URL/);
    expect(messageOf({ INFERENCE_PROMPT_STYLE: 'poem' })).toMatch(/^Configuration error: INFERENCE_PROMPT_STYLE must be chat or completion/);
    expect(messageOf({ INFERENCE_CONCURRENCY: '0' })).toBe('Configuration error: INFERENCE_CONCURRENCY must be at least 1');
    expect(messageOf({ ENGINE_THREADS: 'two' })).toMatch(/^Configuration error: ENGINE_THREADS must be a non-negative integer/);
    expect(messageOf({ INFERENCE_API_KEY: 'sk-x' })).toMatch(/^Configuration error: INFERENCE_API_KEY is set but INFERENCE_URL is not/);
    expect(() => loadEngineConfig({ INFERENCE_API_KEY: 'sk-x' })).toThrow(/INFERENCE_API_KEY is set but INFERENCE_URL is not/);
    expect(messageOf({ INFERENCE_SERVER: 'tgi' })).toBe(
      'Configuration error: INFERENCE_SERVER must be auto, vllm, sglang or openai (which server INFERENCE_URL is, for loading trained adapters)',
    );
    expect(messageOf({ INFERENCE_ADAPTERS_DIR: 'adapters' })).toBe(
      'Configuration error: INFERENCE_ADAPTERS_DIR must be an absolute path: the adapters folder as the inference server sees it',
    );
  });

  it('TRAINER_DEVICE: auto by default, cpu or cuda, anything else stops start-up naming it', () => {
    expect(loadEngineConfig({}).trainerDevice).toBe('auto');
    expect(loadEngineConfig({ TRAINER_DEVICE: 'cuda' }).trainerDevice).toBe('cuda');
    expect(loadEngineConfig({ TRAINER_DEVICE: 'cpu' }).trainerDevice).toBe('cpu');
    expect(messageOf({ TRAINER_DEVICE: 'gpu' })).toBe(
      'Configuration error: TRAINER_DEVICE must be auto, cpu or cuda (where the bundled trainer computes; auto = cuda when torch finds a GPU)',
    );
  });

  it('passes which server INFERENCE_URL is and its adapters folder to the engine; auto by default', () => {
    const url = { INFERENCE_URL: 'http://gpu:8000' };
    expect(inferenceFromConfig(loadConfig({ ...base, ...url }).engines)).toMatchObject({ server: 'auto' });
    expect(inferenceFromConfig(loadConfig({ ...base, ...url }).engines)).not.toHaveProperty('serverAdaptersDir');
    const sglang = loadConfig({ ...base, ...url, INFERENCE_SERVER: 'sglang', INFERENCE_ADAPTERS_DIR: '/mnt/adapters' });
    expect(inferenceFromConfig(sglang.engines)).toMatchObject({ server: 'sglang', serverAdaptersDir: '/mnt/adapters' });
  });

  it('Together trains only where Together serves: with MODELS_DIR or an endpoint of the user\'s own, start-up stops naming both fixes', () => {
    const together = { TOGETHER_API_KEY: 'tg-key', TOGETHER_API_URL: 'http://together.test/v1' };
    // Alone, or with INFERENCE_URL naming Together itself, runs and trainings both go to Together.
    expect(inferenceFromConfig(loadConfig({ ...base, ...together }).engines)).toMatchObject({ url: 'http://together.test/v1', apiKey: 'tg-key' });
    const explicit = loadConfig({ ...base, ...together, INFERENCE_URL: 'http://together.test/' });
    expect(inferenceFromConfig(explicit.engines)).toMatchObject({ url: 'http://together.test/', apiKey: 'tg-key' });
    // A fine-tune would be launched on Together and then asked for on a server that cannot have it.
    expect(messageOf({ ...together, MODELS_DIR: os.tmpdir() })).toMatch(
      /^Configuration error: MODELS_DIR runs models on this machine, but TOGETHER_API_KEY trains on Together; a model Together fine-tunes is served only by Together's inference, so runs must go there too: unset it to run on Together, or unset TOGETHER_API_KEY to train with the bundled trainer$/,
    );
    expect(messageOf({ ...together, INFERENCE_URL: 'http://gpu:8000/v1' })).toMatch(
      /^Configuration error: INFERENCE_URL sends runs to http:\/\/gpu:8000\/v1, but TOGETHER_API_KEY trains on Together; .* unset TOGETHER_API_KEY to train with the bundled trainer$/,
    );
    expect(() => loadEngineConfig({ ...together, MODELS_DIR: os.tmpdir() })).toThrow(/MODELS_DIR runs models on this machine, but TOGETHER_API_KEY trains on Together/);
  });
});
