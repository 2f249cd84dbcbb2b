// Trained adapters served on vLLM and SGLang (their fakes, real HTTP): loaded the server's way, named in each request, reloaded after a restart, faults retried.
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAiInference } from '../../src/platform/engines/inference.js';
import { createAdapterServing, type AdapterServingOptions } from '../../src/platform/engines/lora-adapters.js';
import { scriptedGenerator } from '../kit/fakes/inference-backend.js';
import { parseModel, startFakeSglang, type FakeSglang } from '../kit/fakes/sglang.js';
import { startFakeVllm, type FakeVllm } from '../kit/fakes/vllm.js';

const BASE = 'Qwen/Qwen2.5-0.5B-Instruct';
const ADAPTER = 'ft/Qwen2.5-0.5B-Instruct-lora-3001';

/** The base model does not know; the trained adapter answers "Lily". */
const answer = (adapter: string | null) => (adapter === ADAPTER ? 'Lily' : 'I do not know');

const servers: Array<FakeVllm | FakeSglang> = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function adapterFile(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-adapters-'));
  const file = path.join(dir, 'trn_3001.gguf');
  await writeFile(file, 'adapter bytes');
  return file;
}

function client(root: string, extra: Partial<AdapterServingOptions> = {}) {
  const inference = createOpenAiInference({ baseUrl: root, label: 'test', retries: 3, retryBaseDelayMs: 10, maxRetryDelayMs: 2_000 });
  const adapters = createAdapterServing({ baseUrl: root, retryBaseMs: 10, ...extra });
  return { inference: adapters.wrap(inference), adapters, close: () => inference.close() };
}

const ask = (c: ReturnType<typeof client>, model: string) => c.inference.complete({ model, prompt: 'Once upon a time, there was a girl named', maxTokens: 8 });

describe('vLLM', () => {
  it('is detected from /v1/models, loads with lora_name and lora_path only, names the adapter as the model, and takes "already loaded" as loaded', async () => {
    const vllm = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(vllm);
    const file = await adapterFile();
    const c = client(vllm.root);
    expect(await c.adapters.kind()).toBe('vllm');
    await c.adapters.load({ name: ADAPTER, path: file, baseModelId: BASE });
    const loads = vllm.requests.filter((r) => r.path === '/v1/load_lora_adapter');
    expect(loads.map((r) => r.body)).toEqual([{ lora_name: ADAPTER, lora_path: file }]);
    // A second load (another process, a restart of ours) answers 400 "already been loaded": that is loaded.
    await createAdapterServing({ baseUrl: vllm.root }).load({ name: ADAPTER, path: file, baseModelId: BASE });
    expect(vllm.requests.filter((r) => r.path === '/v1/load_lora_adapter').map((r) => r.status)).toEqual([200, 400]);

    expect((await ask(c, ADAPTER)).text).toBe('Lily');
    expect((await ask(c, BASE)).text).toBe('I do not know');
    expect(vllm.completions).toEqual([
      { model: ADAPTER, adapter: ADAPTER, status: 200 },
      { model: BASE, adapter: null, status: 200 },
    ]);
    // The model list shows the adapter under its base, as vLLM does.
    expect((await c.inference.listModels()).map((m) => [m.id, m.parent])).toEqual([
      [BASE, null],
      [ADAPTER, BASE],
    ]);
    await c.close();
  });

  it('after a server restart, a run on the adapter gets 404, reloads it once and is answered; a process that never loaded it loads it first', async () => {
    const vllm = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(vllm);
    const file = await adapterFile();
    const registration = { name: ADAPTER, path: file, baseModelId: BASE };
    const c = client(vllm.root);
    await c.adapters.load(registration);
    await vllm.restart();
    expect(vllm.adapters()).toEqual([]);
    expect((await ask(c, ADAPTER)).text).toBe('Lily');
    const completions = vllm.requests.filter((r) => r.path === '/v1/chat/completions' || r.path === '/v1/completions');
    expect(completions.map((r) => r.status)).toEqual([404, 200]);
    expect(vllm.requests.filter((r) => r.path === '/v1/load_lora_adapter').map((r) => r.status)).toEqual([200, 200]);
    await c.close();

    // A platform process restarted too: it finds the adapter by the trained model's name and loads it before asking.
    await vllm.restart();
    const fresh = client(vllm.root, { lookup: async (name) => (name === ADAPTER ? registration : null) });
    const before = vllm.requests.length;
    expect((await ask(fresh, ADAPTER)).text).toBe('Lily');
    expect(vllm.requests.slice(before).map((r) => `${r.path} ${r.status}`)).toEqual([
      '/v1/models 200',
      '/v1/load_lora_adapter 200',
      '/v1/models 200',
      '/v1/chat/completions 200',
    ]);
    await fresh.close();
  });

  it('a 429 with Retry-After and a 503 on the load are retried, the Retry-After honoured', async () => {
    const vllm = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(vllm);
    const file = await adapterFile();
    const c = client(vllm.root, { server: 'vllm' });
    vllm.faults.rateLimitNext = 1;
    vllm.faults.retryAfterSeconds = 1;
    vllm.faults.serverErrorNext = 1;
    const started = Date.now();
    await c.adapters.load({ name: ADAPTER, path: file, baseModelId: BASE });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(vllm.requests.map((r) => r.status)).toEqual([429, 503, 200]);
    // ... and on a completion.
    vllm.faults.rateLimitNext = 1;
    vllm.faults.retryAfterSeconds = 0;
    expect((await ask(c, ADAPTER)).text).toBe('Lily');
    await c.close();
  });

  it('without runtime LoRA updating, loading says which flag to set; a missing adapter file is named', async () => {
    const off = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer), runtimeLoraUpdating: false });
    servers.push(off);
    const file = await adapterFile();
    await expect(client(off.root).adapters.load({ name: ADAPTER, path: file, baseModelId: BASE })).rejects.toThrow(
      /vLLM at .* does not load adapters at runtime .*VLLM_ALLOW_RUNTIME_LORA_UPDATING=True/,
    );
    const on = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(on);
    await expect(client(on.root).adapters.load({ name: ADAPTER, path: '/nowhere/trn_1.gguf', baseModelId: BASE })).rejects.toThrow(
      /could not load adapter ft\/Qwen2.5-0.5B-Instruct-lora-3001 \(\/nowhere\/trn_1.gguf\): Loading lora .* No adapter found for \/nowhere\/trn_1.gguf/,
    );
  });

  it('INFERENCE_ADAPTERS_DIR: the path sent is the adapter file in the folder as the server sees it', async () => {
    const vllm = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(vllm);
    const file = await adapterFile();
    await client(vllm.root, { serverAdaptersDir: path.dirname(file) }).adapters.load({ name: ADAPTER, path: '/platform/models/adapters/trn_3001.gguf', baseModelId: BASE });
    expect(vllm.requests.at(-1)!.body).toEqual({ lora_name: ADAPTER, lora_path: file });
  });
});

describe('SGLang', () => {
  it('parses model the way SGLang does: base:adapter at the first colon, trimmed, an empty adapter is none', () => {
    expect(parseModel('meta-llama/Llama-3.1-8B:sql-expert')).toEqual({ base: 'meta-llama/Llama-3.1-8B', adapter: 'sql-expert' });
    expect(parseModel('model:adapter:extra')).toEqual({ base: 'model', adapter: 'adapter:extra' });
    expect(parseModel(' m : a ')).toEqual({ base: 'm', adapter: 'a' });
    expect(parseModel('m:')).toEqual({ base: 'm', adapter: null });
  });

  it('is detected, loads through /load_lora_adapter, names the base as model and the adapter in lora_path, and reloads once after a restart', async () => {
    const sglang = await startFakeSglang({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(sglang);
    const file = await adapterFile();
    const c = client(sglang.root);
    expect(await c.adapters.kind()).toBe('sglang');
    await c.adapters.load({ name: ADAPTER, path: file, baseModelId: BASE });
    expect(sglang.requests.filter((r) => r.path === '/load_lora_adapter').map((r) => r.body)).toEqual([{ lora_name: ADAPTER, lora_path: file }]);
    // Loaded again: SGLang's 400 "already loaded" counts as loaded.
    await createAdapterServing({ baseUrl: sglang.root }).load({ name: ADAPTER, path: file, baseModelId: BASE });

    expect((await ask(c, ADAPTER)).text).toBe('Lily');
    expect((await ask(c, BASE)).text).toBe('I do not know');
    const asked = sglang.requests.filter((r) => r.path === '/v1/chat/completions');
    expect(asked.map((r) => [r.body!.model, r.body!.lora_path])).toEqual([
      [BASE, ADAPTER],
      [BASE, undefined],
    ]);
    expect(sglang.completions.map((c) => [c.adapter, c.status])).toEqual([[ADAPTER, 200], [null, 200]]);

    await sglang.restart();
    sglang.faults.serverErrorNext = 1;
    expect((await ask(c, ADAPTER)).text).toBe('Lily');
    const after = sglang.requests.filter((r) => r.path === '/v1/chat/completions').slice(2);
    // 503 retried, then 400 "not loaded", the adapter reloaded, asked again.
    expect(after.map((r) => r.status)).toEqual([503, 400, 200]);
    expect(sglang.requests.filter((r) => r.path === '/load_lora_adapter').map((r) => r.status)).toEqual([200, 400, 200]);
    await c.close();
  });

  it('an adapter SGLang refuses is reported in its words', async () => {
    const sglang = await startFakeSglang({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(sglang);
    await expect(client(sglang.root).adapters.load({ name: ADAPTER, path: '/nowhere/trn_2.gguf', baseModelId: BASE })).rejects.toThrow(
      /SGLang at .* could not load adapter .*: No adapter found for \/nowhere\/trn_2.gguf/,
    );
  });
});
