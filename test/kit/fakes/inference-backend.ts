// What does the generating behind the vLLM and SGLang fakes: a real llama.cpp server (GGUF model and adapters) or a scripted answer.
import http from 'node:http';
import { open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

/** An adapter a fake server has loaded: its name and the path it was loaded from. */
export interface LoadedAdapter {
  name: string;
  path: string;
}

export interface Generator {
  /** `POST /v1/completions` or `/v1/chat/completions` with `body.model` already the base; `adapter` applied when set. */
  complete(route: string, body: Record<string, unknown>, adapter: LoadedAdapter | null): Promise<[number, unknown]>;
  /** `POST /tokenize` of the base model. */
  tokenize(body: Record<string, unknown>): Promise<[number, unknown]>;
  /** Prepares an adapter file; a message when it cannot be applied. */
  load(adapter: LoadedAdapter): Promise<string | null>;
  unload(name: string): Promise<void>;
}

/** Fault switches shared by the fakes, changeable while they run. */
export interface ServerFaults {
  /** The next n requests (any route) answer 429 with Retry-After: `retryAfterSeconds`. */
  rateLimitNext: number;
  retryAfterSeconds: number;
  /** The next n requests answer `serverErrorStatus`. */
  serverErrorNext: number;
  serverErrorStatus: number;
  /** The next completion naming a loaded adapter finds the server restarted: every runtime-loaded adapter forgotten. */
  restartBeforeAdapterRequest: boolean;
}

export const NO_FAULTS: ServerFaults = { rateLimitNext: 0, retryAfterSeconds: 1, serverErrorNext: 0, serverErrorStatus: 503, restartBeforeAdapterRequest: false };

export interface RecordedRequest {
  method: string;
  path: string;
  status: number;
  body: Record<string, unknown> | null;
}

export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(Buffer.byteLength(text) / 4));
}

export async function readJson(request: http.IncomingMessage): Promise<Record<string, unknown> | null> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return null;
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Generation by an OpenAI-compatible server that serves `model` and loads GGUF adapters through
 * `POST /v1/load_lora_adapter` with `base_model` (the embedded llama.cpp server): the fake in front
 * of it plays the GPU server's protocol, this does the arithmetic.
 */
export function backendGenerator(backend: { url: string; model: string }): Generator {
  const root = backend.url.replace(/\/+$/, '');
  async function post(route: string, body: unknown): Promise<[number, unknown]> {
    const response = await fetch(root + route, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await response.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // text
    }
    return [response.status, json];
  }
  return {
    complete: (route, body, adapter) => post(route, { ...body, model: adapter ? adapter.name : backend.model }),
    tokenize: (body) => post('/tokenize', { ...body, model: backend.model }),
    async load(adapter) {
      // llama.cpp reads GGUF adapters: behind a fake GPU server, a PEFT folder `x.peft` is served from the GGUF written beside it, `x.gguf`.
      const gguf = adapter.path.endsWith('.peft') ? `${adapter.path.slice(0, -'.peft'.length)}.gguf` : adapter.path;
      const [status, json] = await post('/v1/load_lora_adapter', { lora_name: adapter.name, lora_path: gguf, base_model: backend.model });
      if (status === 200) return null;
      return typeof json === 'string' ? json : JSON.stringify(json);
    },
    async unload(name) {
      await post('/v1/unload_lora_adapter', { lora_name: name });
    },
  };
}

/** Generation by a function of (adapter name or null, prompt): for tests about the protocol, not the model. */
export function scriptedGenerator(answer: (adapter: string | null, prompt: string) => string): Generator {
  return {
    async complete(route, body, adapter) {
      const messages = body.messages as Array<{ role: string; content: string }> | undefined;
      const prompt = messages ? (messages.find((m) => m.role === 'user')?.content ?? '') : String(body.prompt ?? '');
      const text = answer(adapter?.name ?? null, prompt);
      const usage = { prompt_tokens: estimateTokens(prompt), completion_tokens: estimateTokens(text), total_tokens: estimateTokens(prompt) + estimateTokens(text) };
      const choice = route.endsWith('/chat/completions')
        ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }
        : { index: 0, text, finish_reason: 'stop' };
      return [200, { id: `cmpl-${Date.now()}`, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: body.model, choices: [choice], usage }];
    },
    async tokenize(body) {
      const count = estimateTokens(String(body.prompt ?? ''));
      return [200, { count, max_model_len: 4096, tokens: Array.from({ length: count }, (_, i) => i) }];
    },
    async load(adapter) {
      const info = await stat(adapter.path).catch(() => null);
      return info ? null : `No adapter found for ${adapter.path}`;
    },
    async unload() {
      // nothing held
    },
  };
}

/** Why a `lora_path` is not a PEFT folder vLLM or SGLang would load; `missing`: no adapter there at all. */
export interface PeftProblem {
  missing: boolean;
  message: string;
}

/**
 * What vLLM and SGLang check when they load an adapter from a local path (vLLM's PEFTHelper and
 * LoRAModel.from_local_checkpoint, SGLang's LoRAConfig and weight iterator): a folder, its
 * `adapter_config.json` (a LORA config with r, lora_alpha and target_modules), and tensors in
 * `adapter_model.safetensors` (or `.bin`) whose names are PEFT's `...<module>.lora_A|lora_B.weight`
 * for a module among the target modules. Null when it would load.
 */
export async function peftFolderProblem(dir: string): Promise<PeftProblem | null> {
  const info = await stat(dir).catch(() => null);
  if (!info) return { missing: true, message: `[Errno 2] No such file or directory: '${dir}'` };
  if (!info.isDirectory()) return { missing: false, message: `[Errno 20] Not a directory: '${path.join(dir, 'adapter_config.json')}'` };
  let config: { peft_type?: unknown; r?: unknown; lora_alpha?: unknown; target_modules?: unknown };
  try {
    config = JSON.parse(await readFile(path.join(dir, 'adapter_config.json'), 'utf8')) as typeof config;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { missing: true, message: `[Errno 2] No such file or directory: '${path.join(dir, 'adapter_config.json')}'` };
    return { missing: false, message: `adapter_config.json in ${dir} is not JSON` };
  }
  const targets = Array.isArray(config.target_modules) ? config.target_modules.filter((m): m is string => typeof m === 'string') : [];
  if (config.peft_type !== 'LORA' || typeof config.r !== 'number' || typeof config.lora_alpha !== 'number' || targets.length === 0) {
    return { missing: false, message: `${dir}/adapter_config.json is not a LoRA config (peft_type LORA, r, lora_alpha, target_modules)` };
  }
  const weights = path.join(dir, 'adapter_model.safetensors');
  const size = (await stat(weights).catch(() => null))?.size;
  if (size === undefined) {
    if (await stat(path.join(dir, 'adapter_model.bin')).catch(() => null)) return null;
    return { missing: false, message: `${dir} doesn't contain tensors` };
  }
  const file = await open(weights, 'r');
  try {
    const head = Buffer.alloc(8);
    await file.read(head, 0, 8, 0);
    const length = Number(head.readBigUInt64LE(0));
    if (size < 8 || length > size - 8) return { missing: false, message: `Error while deserializing header: HeaderTooLarge (${weights})` };
    const text = Buffer.alloc(length);
    await file.read(text, 0, length, 8);
    const header = JSON.parse(text.toString('utf8')) as Record<string, { dtype?: string; shape?: number[]; data_offsets?: [number, number] }>;
    for (const [name, tensor] of Object.entries(header)) {
      if (name === '__metadata__') continue;
      const module = /\.([a-z_]+)\.lora_[AB]\.weight$/.exec(name)?.[1];
      if (!module || !targets.includes(module)) {
        return { missing: false, message: `While loading ${dir}, expected target modules in ${JSON.stringify(targets)} but received ${JSON.stringify([name])}. Please verify that the loaded LoRA module is correct` };
      }
      const [begin, end] = tensor.data_offsets ?? [0, -1];
      if (!(begin >= 0 && end >= begin && 8 + length + end <= size)) return { missing: false, message: `Error while deserializing header: InvalidOffset(${JSON.stringify(name)})` };
    }
  } catch {
    return { missing: false, message: `Error while deserializing header: InvalidHeaderDeserialization (${weights})` };
  } finally {
    await file.close();
  }
  return null;
}

/** Starts an HTTP server on loopback; resolves with its root URL and a closer. */
export async function listen(handler: http.RequestListener): Promise<{ root: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    root: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
