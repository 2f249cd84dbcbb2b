// Ray configuration: RAY_ADDRESS makes trainings Ray jobs; what it needs is named one variable a line.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadEngineConfig } from '@verdict/platform/config';
import { ConfigError, loadConfig } from '../../src/config.js';
import { trainingFromConfig } from '@verdict/platform/engines/training-setup';
import { SILENT_LOGGER } from '@verdict/platform/sandbox/context';

const base = { SLACK_BOT_TOKEN: 'xoxb-test-token', SLACK_SIGNING_SECRET: 'signing-secret', ANTHROPIC_API_KEY: 'test-api-key' };
const dir = os.tmpdir();
const ray = { RAY_ADDRESS: 'http://ray-head:8265', RAY_SHARED_DIR: dir, MODELS_DIR: dir };

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.variable} ${p.detail}`);
  }
  throw new Error('expected a configuration error');
}

describe('Ray configuration', () => {
  it('is off by default; RAY_ADDRESS with shared storage makes trainings Ray jobs with the defaults', async () => {
    expect(loadConfig(base).engines.ray).toBeUndefined();
    const { engines } = loadConfig({ ...base, ...ray });
    expect(engines.ray).toEqual({
      address: 'http://ray-head:8265',
      sharedDir: path.resolve(dir),
      clusterSharedDir: path.resolve(dir),
      headers: {},
      numGpus: 1,
      numCpus: 1,
      resources: undefined,
      python: 'python3',
      pollMs: 2000,
      maxPollMs: 30000,
    });
    const training = trainingFromConfig(engines, await mkdtemp(path.join(os.tmpdir(), 'ray-config-')), SILENT_LOGGER);
    expect(training?.trainer.label).toBe('PyTorch LoRA as Ray jobs on ray-head:8265 (1 GPU a job)');
    expect(training?.adaptersDir).toBe(path.join(dir, 'adapters'));
  });

  it('reads the cluster mount, the token and headers, the resources and the python', () => {
    const config = loadEngineConfig({
      ...ray,
      RAY_CLUSTER_SHARED_DIR: '/mnt/shared',
      RAY_AUTH_TOKEN: 'tok',
      RAY_JOB_HEADERS: '{"X-Queue": "gpu"}',
      RAY_NUM_GPUS: '0.5',
      RAY_NUM_CPUS: '4',
      RAY_ENTRYPOINT_RESOURCES: '{"accelerator_type:A100": 1}',
      RAY_PYTHON: '/opt/venv/bin/python',
      RAY_POLL_MS: '500',
      RAY_MAX_POLL_MS: '100',
    });
    expect(config.ray).toEqual({
      address: 'http://ray-head:8265',
      sharedDir: path.resolve(dir),
      clusterSharedDir: '/mnt/shared',
      headers: { Authorization: 'Bearer tok', 'X-Queue': 'gpu' },
      numGpus: 0.5,
      numCpus: 4,
      resources: { 'accelerator_type:A100': 1 },
      python: '/opt/venv/bin/python',
      pollMs: 500,
      maxPollMs: 500,
    });
  });

  it('names each missing or bad variable, one line each', () => {
    expect(problems({ RAY_ADDRESS: 'ray://ray-head:10001', RAY_SHARED_DIR: dir, MODELS_DIR: dir })).toEqual([
      "RAY_ADDRESS must be the HTTP address of the Ray cluster's dashboard (its Jobs API), e.g. http://ray-head:8265",
    ]);
    expect(problems({ RAY_ADDRESS: 'http://ray-head:8265' })).toEqual([
      expect.stringMatching(/^RAY_SHARED_DIR is required with RAY_ADDRESS: a folder on storage the Ray cluster's nodes also mount/),
      expect.stringMatching(/^MODELS_DIR is required with RAY_ADDRESS: the GGUF files of the base models/),
    ]);
    expect(problems({ ...ray, TOGETHER_API_KEY: 'k' })).toEqual(['RAY_ADDRESS and TOGETHER_API_KEY both choose the trainer: set one of them']);
    expect(problems({ ...ray, RAY_SHARED_DIR: '/no/such/folder' })).toEqual([
      "RAY_SHARED_DIR must be an existing folder on storage the Ray cluster's nodes also mount",
    ]);
    expect(problems({ ...ray, RAY_CLUSTER_SHARED_DIR: 'relative/path' })).toEqual([
      "RAY_CLUSTER_SHARED_DIR must be an absolute path: where the Ray cluster's nodes mount RAY_SHARED_DIR",
    ]);
    expect(problems({ ...ray, RAY_JOB_HEADERS: 'Authorization: Bearer x' })).toEqual([
      'RAY_JOB_HEADERS must be a JSON object of strings, e.g. {"Authorization": "Bearer <token>"}',
    ]);
    expect(problems({ ...ray, RAY_ENTRYPOINT_RESOURCES: '{"GPU": "one"}' })).toEqual([
      'RAY_ENTRYPOINT_RESOURCES must be a JSON object of non-negative numbers, e.g. {"accelerator_type:A100": 1}',
    ]);
    expect(problems({ ...ray, RAY_NUM_GPUS: '-1' })).toEqual(['RAY_NUM_GPUS must be a non-negative number']);
    expect(problems({ RAY_SHARED_DIR: dir })).toEqual(['RAY_SHARED_DIR is set but RAY_ADDRESS is not: set the Ray cluster it is for']);
    expect(() => loadEngineConfig({ RAY_ADDRESS: 'http://ray-head:8265', RAY_SHARED_DIR: dir })).toThrow(/MODELS_DIR is required with RAY_ADDRESS/);
  });
});
