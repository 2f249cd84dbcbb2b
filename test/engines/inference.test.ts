// The OpenAI-compatible inference client against a fault fake: styles, auth, retries honouring Retry-After, timeouts, malformed bodies, token counts.
import { afterEach, describe, expect, it } from 'vitest';
import {
  InferenceError,
  createOpenAiInference,
  estimateTokens,
  generationBudget,
  type InferenceEngine,
} from '@verdict/platform/engines/inference';
import { startFakeOpenAi, type FakeOpenAiServer } from '../kit/fakes/openai-faults.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: Partial<Parameters<typeof createOpenAiInference>[0]> = {}): Promise<{ fake: FakeOpenAiServer; engine: InferenceEngine }> {
  const fake = await startFakeOpenAi({
    models: [
      { id: 'plain', chat_template: false },
      { id: 'instruct', chat_template: true },
      { id: 'unlabelled' },
      { id: 'plain-lora', parent: 'plain' },
    ],
  });
  const engine = createOpenAiInference({ baseUrl: `${fake.url}/v1`, label: 'fake engine', retryBaseDelayMs: 10, timeoutMs: 2_000, ...options });
  cleanups.push(() => fake.close(), () => engine.close());
  return { fake, engine };
}

describe('OpenAI-compatible inference client', () => {
  it('uses /v1/completions for a model without a chat template (and its adapters), chat otherwise, with the API key as Bearer', async () => {
    const { fake, engine } = await setup({ apiKey: 'sk-local' });
    const plain = await engine.complete({ model: 'plain', prompt: 'Once upon', maxTokens: 8 });
    const lora = await engine.complete({ model: 'plain-lora', prompt: 'Once upon', maxTokens: 8 });
    const chat = await engine.complete({ model: 'instruct', prompt: 'What is 2+2?', maxTokens: 8 });
    const unlabelled = await engine.complete({ model: 'unlabelled', prompt: 'hi', maxTokens: 8 });
    expect([plain.style, lora.style, chat.style, unlabelled.style]).toEqual(['completion', 'completion', 'chat', 'chat']);
    const generation = fake.generationRequests();
    expect(generation.map((r) => r.path)).toEqual(['/v1/completions', '/v1/completions', '/v1/chat/completions', '/v1/chat/completions']);
    expect(generation[0]!.body).toMatchObject({ model: 'plain', prompt: 'Once upon', max_tokens: 8, temperature: 0 });
    expect(generation[2]!.body).toMatchObject({ messages: [{ role: 'user', content: 'What is 2+2?' }], temperature: 0 });
    expect(new Set(fake.requests.map((r) => r.authorization))).toEqual(new Set(['Bearer sk-local']));
    expect(plain).toMatchObject({ text: 'answer to Once upon', promptTokens: 2, completionTokens: 4, usageReported: true, finishReason: 'stop' });
    expect(fake.requests.filter((r) => r.path === '/v1/models')).toHaveLength(1);
  });

  it('asks models the endpoint does not label in the configured style', async () => {
    const { fake, engine } = await setup({ promptStyle: 'completion' });
    await engine.complete({ model: 'unlabelled', prompt: 'hi', maxTokens: 4 });
    expect(fake.generationRequests()[0]!.path).toBe('/v1/completions');
  });

  it('lists the models the endpoint serves, adapters with their parent', async () => {
    const { engine } = await setup();
    expect(await engine.listModels()).toEqual([
      { id: 'plain', parent: null, chatTemplate: false, params: null },
      { id: 'instruct', parent: null, chatTemplate: true, params: null },
      { id: 'unlabelled', parent: null, chatTemplate: null, params: null },
      { id: 'plain-lora', parent: 'plain', chatTemplate: null, params: null },
    ]);
  });

  it('retries a 429 after the Retry-After the endpoint asked for', async () => {
    const { fake, engine } = await setup();
    await engine.listModels();
    fake.faults.push({ path: '/v1/completions', fault: { kind: 'status', status: 429, retryAfter: '1' } });
    const started = Date.now();
    const result = await engine.complete({ model: 'plain', prompt: 'p', maxTokens: 4 });
    const generation = fake.generationRequests();
    expect(result.text).toBe('answer to p');
    expect(generation).toHaveLength(2);
    expect(generation[1]!.at - generation[0]!.at).toBeGreaterThanOrEqual(950);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('retries 5xx with backoff and gives up after the configured retries with the endpoint\'s message', async () => {
    const { fake, engine } = await setup({ retries: 2 });
    await engine.listModels();
    fake.faults.push({ path: '/v1/', fault: { kind: 'status', status: 502 } }, { path: '/v1/', fault: { kind: 'status', status: 503 } });
    expect((await engine.complete({ model: 'plain', prompt: 'p', maxTokens: 4 })).text).toBe('answer to p');
    expect(fake.generationRequests()).toHaveLength(3);

    for (let i = 0; i < 3; i++) fake.faults.push({ path: '/v1/', fault: { kind: 'status', status: 500 } });
    const error = await engine.complete({ model: 'plain', prompt: 'q', maxTokens: 4 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InferenceError);
    expect(error).toMatchObject({ code: 'server_error', status: 500 });
    expect((error as Error).message).toMatch(/POST \/v1\/completions on http:\/\/127\.0\.0\.1:\d+ answered 500: injected 500/);
    expect(fake.countFor('q')).toBe(3);
  });

  it('times out a call that hangs, retries it, and says so when every attempt hangs', async () => {
    const { fake, engine } = await setup({ timeoutMs: 200, retries: 1 });
    await engine.listModels();
    fake.faults.push({ path: '/v1/completions', fault: { kind: 'hang', ms: 1_000 } });
    expect((await engine.complete({ model: 'plain', prompt: 'p', maxTokens: 4 })).text).toBe('answer to p');
    fake.faults.push(
      { path: '/v1/completions', fault: { kind: 'hang', ms: 1_000 } },
      { path: '/v1/completions', fault: { kind: 'hang', ms: 1_000 } },
    );
    const started = Date.now();
    const error = await engine.complete({ model: 'plain', prompt: 'q', maxTokens: 4 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'timeout' });
    expect((error as Error).message).toMatch(/timed out after 200 ms/);
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('fails at once, naming the problem, on a body that is not JSON or lacks the OpenAI shape', async () => {
    const { fake, engine } = await setup();
    await engine.listModels();
    fake.faults.push({ path: '/v1/completions', fault: { kind: 'raw', body: '<html>proxy error</html>' } });
    await expect(engine.complete({ model: 'plain', prompt: 'a', maxTokens: 4 })).rejects.toThrow(/not JSON: <html>proxy error/);
    fake.faults.push({ path: '/v1/completions', fault: { kind: 'json', body: { choices: [] } } });
    await expect(engine.complete({ model: 'plain', prompt: 'b', maxTokens: 4 })).rejects.toThrow(/without the OpenAI shape: choices/);
    fake.faults.push({ path: '/v1/chat/completions', fault: { kind: 'json', body: { choices: [{ text: 'x' }] } } });
    await expect(engine.complete({ model: 'instruct', prompt: 'c', maxTokens: 4 })).rejects.toThrow(/choices\[0\]\.message/);
    expect(fake.generationRequests()).toHaveLength(3);
  });

  it('does not retry a request the endpoint rejects', async () => {
    const { fake, engine } = await setup();
    const error = await engine.complete({ model: 'missing', prompt: 'a', maxTokens: 4 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'rejected', status: 404, retryable: false });
    expect((error as Error).message).toMatch(/model missing not found/);
    expect(fake.generationRequests()).toHaveLength(1);
  });

  it('counts tokens with /tokenize, and falls back to the documented estimate once an endpoint lacks it', async () => {
    const { fake, engine } = await setup();
    expect(await engine.countTokens('plain', 'one two three')).toEqual({ count: 3, exact: true });
    expect(fake.requests.at(-1)!.body).toEqual({ model: 'plain', prompt: 'one two three', add_special_tokens: false });
    fake.tokenize = false;
    expect(await engine.countTokens('plain', 'one two three')).toEqual({ count: estimateTokens('one two three'), exact: false });
    expect(await engine.countTokens('plain', 'four')).toEqual({ count: 2, exact: false });
    expect(fake.requests.filter((r) => r.path === '/tokenize')).toHaveLength(2);
  });

  it('budgets generation above the expected answer\'s length', () => {
    expect(generationBudget(5)).toBeGreaterThan(5);
    expect(generationBudget(5, 64)).toBe(64);
    for (let n = 0; n < 200; n++) expect(generationBudget(n)).toBeGreaterThanOrEqual(n + 8);
  });
});
