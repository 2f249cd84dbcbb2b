// The embedded inference server on a real model (stories260K) over real HTTP: OpenAI and vLLM wire shapes, greedy output as llama.cpp's own, runtime LoRA.
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { getLlama, JinjaTemplateChatWrapper, LlamaChat, LlamaCompletion, LlamaLogLevel, type Llama, type LlamaModel } from 'node-llama-cpp';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlamaServer, type LlamaServer } from '@verdict/platform/engines/llama-server';
import { createPytorchTrainer } from '@verdict/platform/engines/pytorch-trainer';
import { DEFAULT_LORA_HYPERPARAMETERS } from '@verdict/platform/engines/trainer';
import { STORIES_MODEL_FILE, TEST_ENGINE_THREADS } from '../../kit/engines.js';
import { withStringMetadata } from './fixtures/gguf-metadata.js';

const SHARED_MODEL = STORIES_MODEL_FILE;
/** A template that says who speaks, in plain words stories260K's vocabulary has. */
const CHAT_TEMPLATE =
  "{% for message in messages %}{% if message['role'] == 'system' %}{{ message['content'] }}\n{% elif message['role'] == 'user' %}Tom said: {{ message['content'] }}\n{% else %}Lily said: {{ message['content'] }}\n{% endif %}{% endfor %}{% if add_generation_prompt %}Lily said:{% endif %}";
const THREADS = TEST_ENGINE_THREADS;
/** Generation on a shared 2-core machine can be 20x slower than alone; these tests allow for it. */
const SLOW = 240_000;
const trainer = createPytorchTrainer({ python: process.env.TRAINER_PYTHON || undefined, threads: THREADS });
const trainerProbe = await trainer.availability();
if (!trainerProbe.ok) console.warn(`SKIPPED the llama-server LoRA test that trains an adapter with the bundled trainer: ${trainerProbe.reason}`);

let dir: string;
let modelsDir: string;
let server: LlamaServer;
let llama: Llama;
let direct: LlamaModel;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'llama-server-'));
  modelsDir = path.join(dir, 'models');
  await mkdir(modelsDir);
  await copyFile(SHARED_MODEL, path.join(modelsDir, 'stories260K.gguf'));
  await writeFile(path.join(modelsDir, 'README.txt'), 'not a model');
  await writeFile(path.join(modelsDir, 'truncated.gguf'), 'GGUF');
  await withStringMetadata(SHARED_MODEL, path.join(modelsDir, 'stories-chat.gguf'), 'tokenizer.chat_template', CHAT_TEMPLATE);
  server = await startLlamaServer({ modelsDir, threads: THREADS, parallel: 2, contextSize: 256 });
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  direct = await llama.loadModel({ modelPath: SHARED_MODEL });
}, SLOW);

afterAll(async () => {
  await server?.close();
  await llama?.dispose();
});

interface Reply {
  status: number;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

async function call(method: 'GET' | 'POST', route: string, body?: unknown): Promise<Reply> {
  const response = await request(server.url + route, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, json, text, headers: response.headers };
}

async function directGreedy(prompt: string, maxTokens: number, lora?: string): Promise<string> {
  const context = await direct.createContext({ contextSize: 256, threads: THREADS, ...(lora ? { lora: { adapters: [{ filePath: lora }] } } : {}) });
  try {
    return await new LlamaCompletion({ contextSequence: context.getSequence() }).generateCompletion(prompt, { maxTokens, temperature: 0 });
  } finally {
    await context.dispose();
  }
}

const complete = (prompt: string, maxTokens: number, extra: object = {}, model = 'stories260K') =>
  call('POST', '/v1/completions', { model, prompt, max_tokens: maxTokens, temperature: 0, ...extra });

describe('llama-server', () => {
  it('names its engine and lists every model GGUF by file name, saying which has a chat template', async () => {
    expect(server.label).toBe('llama.cpp, CPU, 1 thread');
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const { status, json } = await call('GET', '/v1/models');
    expect(status).toBe(200);
    expect(json).toEqual({
      object: 'list',
      data: [
        { id: 'stories-chat', object: 'model', created: expect.any(Number), owned_by: 'llama.cpp', root: 'stories-chat', parent: null, max_model_len: 256, chat_template: true },
        { id: 'stories260K', object: 'model', created: expect.any(Number), owned_by: 'llama.cpp', root: 'stories260K', parent: null, max_model_len: 256, chat_template: false },
      ],
    });
  });

  it('answers greedy completions exactly as a direct node-llama-cpp call, with usage and finish reason', async () => {
    const prompt = 'Once upon a time';
    const { status, json } = await complete(prompt, 24);
    expect(status).toBe(200);
    const expected = await directGreedy(prompt, 24);
    expect(expected.length).toBeGreaterThan(20);
    expect(json).toMatchObject({ object: 'text_completion', model: 'stories260K', choices: [{ index: 0, text: expected, finish_reason: 'length' }] });
    const tokens = await call('POST', '/tokenize', { model: 'stories260K', prompt });
    expect(tokens.json).toEqual({ count: direct.tokenize(prompt).length + 1, max_model_len: 256, tokens: [direct.tokens.bos, ...direct.tokenize(prompt)] });
    expect(json.usage).toEqual({ prompt_tokens: tokens.json.count, completion_tokens: 24, total_tokens: tokens.json.count + 24 });
    const bare = await call('POST', '/tokenize', { model: 'stories260K', prompt, add_special_tokens: false });
    expect(bare.json.count).toBe(tokens.json.count - 1);
  }, SLOW);

  it('is deterministic at temperature 0, also under concurrent requests past its parallel slots', async () => {
    const prompts = ['Once upon a time', 'Tom and Sue went to the park to'];
    const alone = [];
    for (const prompt of prompts) alone.push((await complete(prompt, 8)).json.choices[0].text);
    const together = await Promise.all([...prompts, ...prompts].map((prompt) => complete(prompt, 8)));
    expect(together.map((r) => r.json.choices[0].text)).toEqual([...alone, ...alone]);
  }, SLOW);

  it('stops at a stop string, leaving it out, and says stop', async () => {
    const full = (await complete('Once upon a time', 24)).json.choices[0].text as string;
    const cut = full.indexOf('Lily');
    expect(cut).toBeGreaterThan(0);
    const { json } = await complete('Once upon a time', 24, { stop: ['Lily'] });
    expect(json.choices[0]).toMatchObject({ text: full.slice(0, cut), finish_reason: 'stop' });
    expect(json.usage.completion_tokens).toBeLessThan(24);
  }, SLOW);

  it('refuses chat on a model without a chat template with a clear 400 in OpenAI error shape', async () => {
    const { status, json } = await call('POST', '/v1/chat/completions', { model: 'stories260K', messages: [{ role: 'user', content: 'hi' }] });
    expect(status).toBe(400);
    expect(json.error).toMatchObject({ type: 'invalid_request_error', code: 'no_chat_template' });
    expect(json.error.message).toMatch(/has no chat template.*\/v1\/completions/);
  });

  it("answers chat completions through the model's own chat template, as node-llama-cpp's chat does", async () => {
    const messages = [
      { role: 'system', content: 'Once upon a time, there was a girl named Lily and a boy named Tom.' },
      { role: 'user', content: 'Do you want to play in the park?' },
    ];
    const { status, json, text } = await call('POST', '/v1/chat/completions', { model: 'stories-chat', messages, max_tokens: 12, temperature: 0 });
    expect(status, text).toBe(200);
    const chatModel = await llama.loadModel({ modelPath: path.join(modelsDir, 'stories-chat.gguf') });
    const context = await chatModel.createContext({ contextSize: 256, threads: THREADS });
    try {
      const chat = new LlamaChat({ contextSequence: context.getSequence(), chatWrapper: new JinjaTemplateChatWrapper({ template: CHAT_TEMPLATE }) });
      const expected = await chat.generateResponse(
        [{ type: 'system', text: messages[0]!.content }, { type: 'user', text: messages[1]!.content }, { type: 'model', response: [] }],
        { maxTokens: 12, temperature: 0 },
      );
      expect(expected.response.length).toBeGreaterThan(0);
      expect(json).toMatchObject({
        object: 'chat.completion',
        model: 'stories-chat',
        choices: [{ index: 0, message: { role: 'assistant', content: expected.response }, finish_reason: expected.metadata.stopReason === 'maxTokens' ? 'length' : 'stop' }],
      });
      expect(json.usage.prompt_tokens).toBeGreaterThan(direct.tokenize(messages[0]!.content + messages[1]!.content).length);
      expect(json.usage.total_tokens).toBe(json.usage.prompt_tokens + json.usage.completion_tokens);
    } finally {
      await context.dispose();
      await chatModel.dispose();
    }
  }, SLOW);

  it('answers bad requests with OpenAI-shaped errors', async () => {
    const cases: Array<[Reply, number, string | RegExp]> = [
      [await complete('x', 4, {}, 'nope'), 404, 'model_not_found'],
      [await call('POST', '/v1/completions', '{"model": '), 400, 'invalid_request'],
      [await call('POST', '/v1/completions', { model: 'stories260K' }), 400, 'invalid_request'],
      [await complete('x', 4, { stream: true }), 400, 'invalid_request'],
      [await complete('Once upon a time '.repeat(80), 16), 400, 'context_length_exceeded'],
      [await call('GET', '/v1/nothing'), 404, 'not_found'],
      [await call('POST', '/v1/unload_lora_adapter', { lora_name: 'never-loaded' }), 404, 'lora_not_found'],
      [await call('POST', '/v1/load_lora_adapter', { lora_name: 'x', lora_path: path.join(modelsDir, 'stories260K.gguf'), base_model: 'stories260K' }), 400, 'invalid_lora_path'],
      [await call('POST', '/v1/load_lora_adapter', { lora_name: 'x', lora_path: path.join(dir, 'missing.gguf'), base_model: 'stories260K' }), 400, 'invalid_lora_path'],
      [await call('POST', '/v1/load_lora_adapter', { lora_name: 'x', lora_path: path.join(dir, 'missing.gguf'), base_model: 'nope' }), 404, 'model_not_found'],
      [await call('POST', '/v1/load_lora_adapter', { lora_name: 'x', lora_path: path.join(dir, 'missing.gguf') }), 400, 'invalid_request'],
      [await call('POST', '/v1/load_lora_adapter', { lora_name: 'stories260K', lora_path: path.join(dir, 'a.gguf') }), 400, 'invalid_request'],
    ];
    for (const [reply, status, code] of cases) {
      expect(reply.status, reply.text).toBe(status);
      expect(reply.json.error.code, reply.text).toMatch(code);
      expect(typeof reply.json.error.message).toBe('string');
    }
  });

  it('answers 503 with Retry-After when more requests wait than its queue holds', async () => {
    const small = await startLlamaServer({ modelsDir, threads: 1, parallel: 1, maxQueue: 0, contextSize: 128 });
    try {
      const ask = () => request(small.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: 'stories260K', prompt: 'Once', max_tokens: 24, temperature: 0 }) });
      const replies = await Promise.all([ask(), ask(), ask()]);
      const statuses = replies.map((r) => r.statusCode).sort();
      await Promise.all(replies.map((r) => r.body.text()));
      expect(statuses[0]).toBe(200);
      expect(statuses).toContain(503);
      expect(replies.find((r) => r.statusCode === 503)!.headers['retry-after']).toBe('1');
    } finally {
      await small.close();
    }
  }, SLOW);

  it('closes during a generation: the request is answered 503 and nothing runs on the disposed model', async () => {
    const closing = await startLlamaServer({ modelsDir, threads: 1, parallel: 1, contextSize: 256 });
    const reply = request(closing.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: 'stories260K', prompt: 'Once', max_tokens: 200, temperature: 0 }) });
    const started = Date.now();
    const first = await request(closing.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: 'stories260K', prompt: 'The', max_tokens: 1, temperature: 0 }) }).then((r) => r.body.text());
    expect(first).toContain('text_completion');
    const closed = closing.close();
    const answer = await reply;
    const body = (await answer.body.json()) as { error?: { code: string } };
    await closed;
    // Either it finished first (a fast machine), or it was cut off with a clear retryable error.
    if (answer.statusCode !== 200) {
      expect(answer.statusCode).toBe(503);
      expect(body.error!.code).toBe('shutting_down');
    }
    expect(Date.now() - started).toBeLessThan(SLOW);
  }, SLOW);

  it.skipIf(!trainerProbe.ok)('serves a LoRA adapter loaded at run time under its name, as llama.cpp applies it', async () => {
    const datasetPath = path.join(dir, 'dataset.jsonl');
    const examples = ['', 'It was a sunny day. ', 'The end. '].map((context) =>
      JSON.stringify({ prompt: `${context}Once upon a time, there was a little girl named`, completion: ' Zara' }),
    );
    await writeFile(datasetPath, examples.join('\n') + '\n');
    const adapterPath = path.join(dir, 'adapters', 'zara.gguf');
    const job = await trainer.start(
      { jobId: 'zara', baseModelPath: SHARED_MODEL, datasetPath, adapterPath, workDir: path.join(dir, 'work'), hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 8 }, threads: THREADS },
      () => undefined,
    );
    expect((await job.done).type).toBe('completed');

    const ambiguous = await call('POST', '/v1/load_lora_adapter', { lora_name: 'stories-zara', lora_path: adapterPath });
    expect(ambiguous.json.error.message).toBe('base_model is required: 2 base models are served (stories-chat, stories260K).');
    const load = { lora_name: 'stories-zara', lora_path: adapterPath, base_model: 'stories260K' };
    const loaded = await call('POST', '/v1/load_lora_adapter', load);
    expect(loaded.status, loaded.text).toBe(200);
    expect((await call('POST', '/v1/load_lora_adapter', load)).status).toBe(200);
    const clash = await call('POST', '/v1/load_lora_adapter', { ...load, lora_path: SHARED_MODEL });
    expect(clash.json.error.code).toBe('lora_already_loaded');

    const models = (await call('GET', '/v1/models')).json.data;
    expect(models.map((m: { id: string; parent: string | null }) => [m.id, m.parent])).toEqual([
      ['stories-chat', null],
      ['stories260K', null],
      ['stories-zara', 'stories260K'],
    ]);

    const prompt = 'Once upon a time, there was a little girl named';
    const base = (await complete(prompt, 6)).json.choices[0].text;
    const adapted = (await complete(prompt, 6, {}, 'stories-zara')).json.choices[0].text;
    expect(base).toBe(await directGreedy(prompt, 6));
    expect(adapted).toBe(await directGreedy(prompt, 6, adapterPath));
    expect(adapted).not.toBe(base);
    expect(adapted.trim()).toMatch(/^Zara/);
    // The base model is unchanged beside it.
    expect((await complete(prompt, 6)).json.choices[0].text).toBe(base);

    expect((await call('POST', '/v1/unload_lora_adapter', { lora_name: 'stories-zara' })).status).toBe(200);
    expect((await complete(prompt, 6, {}, 'stories-zara')).status).toBe(404);
  }, 240_000);
});
