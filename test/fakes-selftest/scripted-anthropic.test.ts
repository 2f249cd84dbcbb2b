// Proves the scripted Messages API speaks the real protocol, using the real @anthropic-ai/sdk client against it.
import Anthropic, { type APIError } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  allText,
  lastToolResults,
  lastUserContent,
  startScriptedAnthropic,
  text,
  toolUse,
  type ScriptedAnthropic,
} from '../kit/fakes/anthropic/index.js';

const MODEL = 'claude-sonnet-5-5';
const tools: Anthropic.Tool[] = [
  { name: 'lookup_run', description: 'Looks up a benchmark run by id.', input_schema: { type: 'object', properties: { id: { type: 'string' } } } },
];

describe('scripted Messages API', () => {
  let fake: ScriptedAnthropic;
  let client: Anthropic;

  beforeAll(async () => {
    fake = await startScriptedAnthropic(() => ({ content: [text('hello')] }));
    client = new Anthropic({ apiKey: 'test', baseURL: fake.baseURL, maxRetries: 2 });
  });
  beforeEach(() => {
    fake.reset();
    fake.setScript(() => ({ content: [text('hello')] }));
  });
  afterAll(() => fake.stop());

  it('serves a tool_use reply the SDK parses, then resolves the tool result on the next turn', async () => {
    fake.setScript((req, { callIndex }) => {
      if (callIndex === 0) return { content: [text('Let me check.'), toolUse('lookup_run', { id: 'run-42' })] };
      const [result] = lastToolResults(req);
      return { content: [text(`${result?.name} said ${String(result?.content)} for ${JSON.stringify(result?.input)}`)] };
    });
    const user: Anthropic.MessageParam = { role: 'user', content: 'How did run-42 do?' };
    const first = await client.messages.create({ model: MODEL, max_tokens: 1024, tools, messages: [user] });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.id).toMatch(/^msg_/);
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(use).toMatchObject({ name: 'lookup_run', input: { id: 'run-42' } });
    expect(use?.id).toMatch(/^toolu_/);
    expect(first.usage.input_tokens).toBeGreaterThan(0);
    expect(first.usage.output_tokens).toBe(Math.ceil(JSON.stringify(first.content).length / 4));

    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 1024,
      tools,
      messages: [user, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use?.id ?? '', content: 'accuracy 0.91' }] }],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([{ type: 'text', text: 'lookup_run said accuracy 0.91 for {"id":"run-42"}' }]);

    const recorded = fake.requests[1];
    expect(recorded?.headers['anthropic-version']).toBeTruthy();
    expect(recorded?.bytes).toBeGreaterThan(0);
    expect(lastUserContent(recorded!.body)).toEqual([{ type: 'tool_result', tool_use_id: use?.id, content: 'accuracy 0.91' }]);
    expect(allText(recorded!.body)).toContain('accuracy 0.91');
  });

  it('answers 529 overloaded, which the SDK retries by itself', async () => {
    fake.failNext(1, { status: 529, type: 'overloaded_error', retryAfter: 0.05 });
    const reply = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    expect(reply.content).toEqual([{ type: 'text', text: 'hello' }]);
    expect(fake.requests.map((r) => r.status)).toEqual([529, 200]);
    expect(fake.requests[0]?.response).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
  });

  it('keeps failing for a time window', async () => {
    fake.failFor(60_000, { status: 529, type: 'overloaded_error', retryAfter: 0.01 });
    await expect(client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(
      Anthropic.OverloadedError,
    );
    expect(fake.requests.map((r) => r.status)).toEqual([529, 529, 529]);
  });

  it('surfaces errors as the SDK APIError subclass with status, type and request id', async () => {
    const noRetry = new Anthropic({ apiKey: 'test', baseURL: fake.baseURL, maxRetries: 0 });
    fake.failNext(1, { status: 429, type: 'rate_limit_error' });
    const limited = await noRetry.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited).toMatchObject({ status: 429, type: 'rate_limit_error' });
    expect((limited as APIError).headers?.get('retry-after')).toBe('1');
    expect((limited as APIError).requestID).toMatch(/^req_/);

    fake.setScript(() => ({ error: { status: 500, type: 'api_error', message: 'boom' } }));
    const internal = await noRetry.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(internal).toBeInstanceOf(Anthropic.InternalServerError);
    expect(internal).toMatchObject({ status: 500, type: 'api_error', apiMessage: 'boom' });
  });

  it('rejects malformed conversations and streaming with 400 invalid_request_error', async () => {
    const orphan = await client.messages
      .create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_missing', content: 'x' }] }] })
      .catch((e: unknown) => e);
    expect(orphan).toBeInstanceOf(Anthropic.BadRequestError);
    expect((orphan as APIError).apiMessage).toContain('tool_use_id');

    const stream = await client.messages.create({ model: MODEL, max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(stream).toBeInstanceOf(Anthropic.BadRequestError);
    expect((stream as APIError).apiMessage).toContain('streaming is not supported');
  });

  it('requires authentication and anthropic-version like the real API', async () => {
    const body = JSON.stringify({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    const unauthenticated = await fetch(`${fake.baseURL}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body });
    expect(unauthenticated.status).toBe(401);
    expect(await unauthenticated.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(unauthenticated.headers.get('request-id')).toMatch(/^req_/);
    const unversioned = await fetch(`${fake.baseURL}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, body });
    expect(unversioned.status).toBe(400);
  });

  it('reports cache creation, then cache reads on a repeated prefix and on a moved breakpoint', async () => {
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You are a benchmark analyst. '.repeat(40), cache_control: { type: 'ephemeral' } }];
    const ask = (messages: Anthropic.MessageParam[]) => client.messages.create({ model: MODEL, max_tokens: 100, system, tools, messages });
    const first = await ask([{ role: 'user', content: 'first question' }]);
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(200);
    expect(first.usage.cache_read_input_tokens).toBe(0);

    const second = await ask([{ role: 'user', content: 'another question' }]);
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBe(0);
    expect(second.usage.input_tokens).toBeGreaterThan(0);

    const turn = (content: string, marked: boolean): Anthropic.MessageParam => ({
      role: 'user',
      content: [{ type: 'text', text: content, ...(marked ? { cache_control: { type: 'ephemeral' as const } } : {}) }],
    });
    const third = await ask([turn('q1', true)]);
    const fourth = await ask([turn('q1', false), { role: 'assistant', content: 'a1' }, turn('q2', true)]);
    expect(fourth.usage.cache_read_input_tokens).toBe(third.usage.cache_read_input_tokens! + third.usage.cache_creation_input_tokens!);
    expect(fourth.usage.cache_creation_input_tokens).toBeGreaterThan(0);
  });

  it('stops at max_tokens and lets a slow reply run into the client timeout', async () => {
    fake.setScript(() => ({ content: [text('word '.repeat(200))] }));
    const cut = await client.messages.create({ model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'talk' }] });
    expect(cut.stop_reason).toBe('max_tokens');
    expect(cut.usage.output_tokens).toBeLessThanOrEqual(20);

    fake.setScript(() => ({ delayMs: 5_000, then: { content: [text('late')] } }));
    const impatient = new Anthropic({ apiKey: 'test', baseURL: fake.baseURL, maxRetries: 0, timeout: 200 });
    await expect(impatient.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(
      Anthropic.APIConnectionTimeoutError,
    );
    await fake.waitForRequests(2, 2000);
    expect(fake.requests[1]?.aborted).toBe(true);
  });
});
