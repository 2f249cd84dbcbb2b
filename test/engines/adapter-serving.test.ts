// Trained adapters served on vLLM and SGLang (their fakes, real HTTP): loaded the server's way, named in each request, reloaded after a restart, faults retried.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAiInference } from '@verdict/platform/engines/inference';
import { createAdapterServing, type AdapterServingOptions } from '@verdict/platform/engines/lora-adapters';
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

/** A safetensors file of one rank-1 PEFT tensor pair for layer 0's q_proj (8-byte length, JSON header, data). */
function safetensors(names: string[]): Buffer {
  const data = Buffer.alloc(names.length * 8 * 4);
  const header: Record<string, unknown> = {};
  names.forEach((name, i) => (header[name] = { dtype: 'F32', shape: [1, 8], data_offsets: [i * 32, (i + 1) * 32] }));
  const json = Buffer.from(JSON.stringify(header).padEnd(Math.ceil(JSON.stringify(header).length / 8) * 8, ' '));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, json, data]);
}

const PEFT_TENSORS = ['base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight', 'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight'];

/** An adapter as the bundled trainer leaves it: `trn_3001.gguf` and its PEFT folder `trn_3001.peft/` beside it. */
async function adapterFile(tensors = PEFT_TENSORS): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-adapters-'));
  const file = path.join(dir, 'trn_3001.gguf');
  await writeFile(file, 'adapter bytes');
  const peft = path.join(dir, 'trn_3001.peft');
  await mkdir(peft);
  await writeFile(path.join(peft, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 1, lora_alpha: 2, target_modules: ['q_proj'], bias: 'none' }));
  await writeFile(path.join(peft, 'adapter_model.safetensors'), safetensors(tensors));
  return file;
}

const peftOf = (file: string) => file.replace(/\.gguf$/, '.peft');

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
    expect(loads.map((r) => r.body)).toEqual([{ lora_name: ADAPTER, lora_path: peftOf(file) }]);
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
    // The PEFT folder is where the platform wrote it, but not where the server looks: vLLM's 404, in its words.
    await expect(client(on.root, { serverAdaptersDir: '/nowhere' }).adapters.load({ name: ADAPTER, path: file, baseModelId: BASE })).rejects.toThrow(
      /could not load adapter ft\/Qwen2.5-0.5B-Instruct-lora-3001 \(\/nowhere\/trn_3001.peft\): Loading lora .* No adapter found for \/nowhere\/trn_3001.peft/,
    );
  });

  it('an adapter with only its GGUF (no PEFT folder) is refused by the platform before vLLM is asked, saying what is missing', async () => {
    const vllm = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(vllm);
    const file = await adapterFile();
    await rm(peftOf(file), { recursive: true });
    await expect(client(vllm.root).adapters.load({ name: ADAPTER, path: file, baseModelId: BASE })).rejects.toThrow(
      /vLLM loads adapters in the Hugging Face PEFT layout, and ft\/Qwen2.5-0.5B-Instruct-lora-3001 has none: .*trn_3001.peft should hold adapter_config.json and adapter_model.safetensors/,
    );
    expect(vllm.requests.filter((r) => r.path === '/v1/load_lora_adapter')).toEqual([]);
  });

  it('the fake refuses, as vLLM does, a lora_path that is not a PEFT folder: a GGUF file, no config, no tensors, tensors of other modules', async () => {
    const vllm = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(vllm);
    const load = async (lora_path: string) => {
      const response = await fetch(`${vllm.root}/v1/load_lora_adapter`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lora_name: 'x', lora_path }) });
      const text = await response.text();
      // vLLM answers a successful load in plain text, a refusal as {"error": {"message"}}.
      return [response.status, response.ok ? text : (JSON.parse(text) as { error: { message: string } }).error.message] as const;
    };
    const file = await adapterFile();
    expect(await load(file)).toEqual([400, `[Errno 20] Not a directory: '${file}/adapter_config.json'`]);
    const empty = path.join(path.dirname(file), 'empty.peft');
    await mkdir(empty);
    expect(await load(empty)).toEqual([404, `Loading lora x failed: No adapter found for ${empty}`]);
    await writeFile(path.join(empty, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 1, lora_alpha: 2, target_modules: ['q_proj'] }));
    expect(await load(empty)).toEqual([400, `${empty} doesn't contain tensors`]);
    const other = await adapterFile(['base_model.model.model.layers.0.mlp.up_proj.lora_A.weight']);
    expect((await load(peftOf(other)))[1]).toMatch(/expected target modules in \["q_proj"\] but received .*up_proj/);
    expect(vllm.adapters()).toEqual([]);
    // The trainer's layout loads.
    expect(await load(peftOf(file))).toEqual([200, "Success: LoRA adapter 'x' added successfully."]);
  });

  it('INFERENCE_ADAPTERS_DIR: the path sent is the adapter PEFT folder in the folder as the server sees it', async () => {
    const vllm = await startFakeVllm({ model: BASE, generator: scriptedGenerator(answer) });
    servers.push(vllm);
    const platform = await adapterFile();
    const asServerSees = await adapterFile();
    await client(vllm.root, { serverAdaptersDir: path.dirname(asServerSees) }).adapters.load({ name: ADAPTER, path: platform, baseModelId: BASE });
    expect(vllm.requests.at(-1)!.body).toEqual({ lora_name: ADAPTER, lora_path: peftOf(asServerSees) });
    expect(vllm.requests.at(-1)!.status).toBe(200);
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
    expect(sglang.requests.filter((r) => r.path === '/load_lora_adapter').map((r) => r.body)).toEqual([{ lora_name: ADAPTER, lora_path: peftOf(file) }]);
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
    const file = await adapterFile();
    await expect(client(sglang.root, { serverAdaptersDir: '/nowhere' }).adapters.load({ name: ADAPTER, path: file, baseModelId: BASE })).rejects.toThrow(
      /SGLang at .* could not load adapter .*: Failed to load LoRA adapter .*: \[Errno 2\] No such file or directory: '\/nowhere\/trn_3001.peft'/,
    );
    // A GGUF sent as lora_path is refused as SGLang refuses it; the PEFT folder loads.
    const loadAnswer = async (lora_path: string) =>
      (await fetch(`${sglang.root}/load_lora_adapter`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lora_name: 'x', lora_path }) })).json();
    expect(await loadAnswer(file)).toMatchObject({ success: false, error_message: expect.stringMatching(/Not a directory/) });
    expect(await loadAnswer(peftOf(file))).toMatchObject({ success: true });
  });
});
