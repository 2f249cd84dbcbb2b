// API fault injection: injected errors and slowness, and how the client's retries and idempotency absorb them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformError } from '@verdict/contract/errors';
import { createHttpPlatform } from '@verdict/contract/http-client';
import type { Platform } from '@verdict/contract/platform';
import type { SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { startTestSandbox } from './helpers.js';
import { sleep } from '../kit/wait.js';

let sandbox: SandboxHandle;
let platform: Platform;

const client = (options: { retries?: number; timeoutMs?: number }) =>
  createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token, retryBaseDelayMs: 5, maxRetryDelayMs: 40, ...options });

beforeAll(async () => {
  ({ sandbox, platform } = await startTestSandbox({ timeScale: 0.005 }));
});

afterAll(async () => {
  await sandbox?.stop();
});

describe('api faults', () => {
  it('errors: reads succeed through the client retries', async () => {
    const resilient = client({ retries: 10 });
    const fragile = client({ retries: 0 });
    sandbox.setFaults({ apiErrorRate: 0.5, retryAfterSeconds: 0 });
    try {
      for (let i = 0; i < 15; i++) expect((await resilient.getBalance()).environment).toBe('sandbox');
      expect((await resilient.listBenchmarks()).length).toBeGreaterThan(3);
      const outcomes = await Promise.all(Array.from({ length: 20 }, () => fragile.getBalance().then(() => 'ok', (e: PlatformError) => e.code)));
      expect(outcomes).toContain('ok');
      expect(outcomes.some((o) => o === 'rate_limited' || o === 'unavailable')).toBe(true);
    } finally {
      sandbox.setFaults({});
    }
  });

  it('errors: a rejected launch was not applied, and a retried launch is applied once', async () => {
    const before = await platform.getBalance();
    sandbox.setFaults({ apiErrorRate: 1, retryAfterSeconds: 0 });
    const rejected = await client({ retries: 2 })
      .launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, 'fault-launch-0')
      .catch((e: PlatformError) => e);
    expect(rejected).toBeInstanceOf(PlatformError);
    sandbox.setFaults({});
    expect(await platform.getBalance()).toEqual(before);

    sandbox.setFaults({ apiErrorRate: 0.6, retryAfterSeconds: 0 });
    let run;
    try {
      run = await client({ retries: 12 }).launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, 'fault-launch-1');
    } finally {
      sandbox.setFaults({});
    }
    expect((await platform.getBalance()).availableCredits).toBe(before.availableCredits - run.priceCredits);
  });

  it('slowness: the client times out, and a slow read succeeds on a later attempt', async () => {
    sandbox.setFaults({ apiSlowRate: 1, apiSlowMs: 500 });
    const started = Date.now();
    const error = await client({ retries: 0, timeoutMs: 150 }).getBalance().catch((e: PlatformError) => e);
    expect(error).toMatchObject({ code: 'timeout', status: null });
    expect(Date.now() - started).toBeLessThan(450);

    sandbox.setFaults({ apiSlowRate: 0.5, apiSlowMs: 500 });
    try {
      for (let i = 0; i < 5; i++) {
        expect((await client({ retries: 10, timeoutMs: 150 }).getBalance()).environment).toBe('sandbox');
      }
    } finally {
      sandbox.setFaults({});
    }
  });

  it('slowness: launches that time out on the client are applied once, found again by their key', async () => {
    const before = await platform.getBalance();
    sandbox.setFaults({ apiSlowRate: 1, apiSlowMs: 300 });
    const input = { benchmarkId: '104', modelId: 'meta-llama/Llama-3.2-1B-Instruct' };
    const error = await client({ retries: 2, timeoutMs: 100 }).launchRun(input, 'slow-launch-1').catch((e: PlatformError) => e);
    expect(error).toMatchObject({ code: 'timeout' });
    await sleep(500);
    sandbox.setFaults({});
    const run = await platform.launchRun(input, 'slow-launch-1');
    expect(run.priceCredits).toBe(8);
    expect((await platform.getBalance()).availableCredits).toBe(before.availableCredits - 8);
  });
});
