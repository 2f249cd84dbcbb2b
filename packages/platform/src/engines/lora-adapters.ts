// Serves produced LoRA adapters on the user's inference server: loads them (vLLM's or SGLang's runtime loading), names them in each request, reloads after a server restart.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { parseRetryAfter } from '@verdict/contract/http-client';
import type { CompletionRequest, InferenceEngine } from './inference.js';
import { InferenceError } from './inference.js';
import { peftAdapterDir } from './trainer.js';

/** A produced adapter as the inference endpoint is told about it (vLLM's runtime LoRA loading). */
export interface AdapterRegistration {
  /** The served name: the fine-tuned model's id; a run on that model asks for this name. */
  name: string;
  path: string;
  /** The base model's id on the endpoint. */
  baseModelId: string;
}

/**
 * Which server runs go to, for what only differs between them: how an adapter is loaded and how a
 * request names it. `openai` is any other OpenAI-compatible endpoint (the embedded llama.cpp
 * server among them), which is sent vLLM's route.
 */
export type InferenceServerKind = 'vllm' | 'sglang' | 'openai';
/** `INFERENCE_SERVER`: a kind, or `auto` (detected from the `owned_by` of `GET /v1/models`). */
export type InferenceServerSetting = InferenceServerKind | 'auto';

export interface AdapterServingOptions {
  /** Endpoint root, e.g. `http://127.0.0.1:8000` (a trailing `/v1` is accepted too). */
  baseUrl: string;
  apiKey?: string;
  /** Default auto. */
  server?: InferenceServerSetting;
  /** The adapters folder as the server sees it, when it mounts the platform's under another path; unset = the platform's path. */
  serverAdaptersDir?: string;
  /** Sends `base_model` with a load: the embedded llama.cpp server takes it (it may serve several base models); vLLM and SGLang do not. */
  sendBaseModel?: boolean;
  /** A trained model's adapter by its served name, when this process has not loaded it yet (after a restart). */
  lookup?(name: string): Promise<AdapterRegistration | null>;
  /** Per attempt. Default 60 s (loading reads the adapter file). */
  timeoutMs?: number;
  /** Attempts on 429, 5xx and network errors. Default 3. */
  attempts?: number;
  /** First backoff step when no Retry-After is given. Default 500 ms. */
  retryBaseMs?: number;
  /** Longest wait honoured from a Retry-After. Default 30 s. */
  maxRetryMs?: number;
}

export interface AdapterServing {
  /** The server's kind, detected once when `auto`. */
  kind(): Promise<InferenceServerKind>;
  /** Loads the adapter on the server; an adapter the server already has under that name counts as loaded. */
  load(adapter: AdapterRegistration): Promise<void>;
  /**
   * `engine` with adapters served: a request on a trained model loads its adapter first if this
   * process has not, names it the server's way (vLLM: `model` = adapter name; SGLang: `model` =
   * base, `lora_path` = adapter name), and after an "adapter not found" answer (a restarted server
   * forgot it) reloads it once and asks again.
   */
  wrap(engine: InferenceEngine): InferenceEngine;
}

/** An adapter could not be loaded; the message says why and what to change. */
export class AdapterLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdapterLoadError';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function normalizeRoot(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith('/v1') ? trimmed.slice(0, -3) : trimmed;
}

/** The message of an error body: vLLM's `{error: {message}}` or `{message}`, SGLang's `{error_message}` or `{message}`, or the text. */
function bodyMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string; error_message?: string; detail?: unknown };
    const message =
      (typeof body.error === 'string' ? body.error : body.error?.message) ?? body.error_message ?? body.message ?? (typeof body.detail === 'string' ? body.detail : undefined);
    if (message) return message;
  } catch {
    // plain text (vLLM answers a successful load in text)
  }
  return text.trim().slice(0, 300);
}

/** Whether an inference error means the server does not have the adapter the request named. */
export function isAdapterMissing(kind: InferenceServerKind, error: unknown): boolean {
  if (!(error instanceof InferenceError) || error.code !== 'rejected') return false;
  // SGLang: 400 "The following requested LoRA adapters are not loaded: ...".
  if (kind === 'sglang') return error.status === 400 && /not loaded/i.test(error.message);
  // vLLM: 404 "The model `x` does not exist."; the embedded server: 404 model_not_found.
  return error.status === 404;
}

export function createAdapterServing(options: AdapterServingOptions): AdapterServing {
  const root = normalizeRoot(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const attempts = Math.max(1, options.attempts ?? 3);
  const retryBaseMs = options.retryBaseMs ?? 500;
  const maxRetryMs = options.maxRetryMs ?? 30_000;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  /** Adapters known by served name (loaded, or looked up once: concurrent first requests share the lookup). */
  const known = new Map<string, Promise<AdapterRegistration | null>>();
  /** Adapters this process loaded on the server since it last found one missing. */
  const loaded = new Set<string>();
  const loading = new Map<string, Promise<void>>();
  let detected: Promise<InferenceServerKind> | null = null;

  async function send(method: 'GET' | 'POST', route: string, body?: unknown): Promise<{ status: number; text: string }> {
    let last = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let wait = retryBaseMs * 2 ** (attempt - 1);
      try {
        const response = await request(root + route, {
          method,
          headers,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.body.text();
        if (response.statusCode !== 429 && response.statusCode < 500) return { status: response.statusCode, text };
        last = `answered ${response.statusCode}: ${bodyMessage(text) || 'no detail'}`;
        const asked = parseRetryAfter(response.headers['retry-after']);
        if (asked !== null) wait = Math.min(maxRetryMs, Math.max(asked, wait));
      } catch (error) {
        last = `could not be reached: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (attempt < attempts) await sleep(wait);
    }
    throw new AdapterLoadError(`${method} ${route} on ${root} ${last}`);
  }

  function kind(): Promise<InferenceServerKind> {
    if (options.server && options.server !== 'auto') return Promise.resolve(options.server);
    detected ??= (async () => {
      const { status, text } = await send('GET', '/v1/models');
      if (status !== 200) throw new AdapterLoadError(`GET /v1/models on ${root} answered ${status}: ${bodyMessage(text)}`);
      const owners = new Set<string>();
      try {
        const body = JSON.parse(text) as { data?: Array<{ owned_by?: unknown }> } | Array<{ owned_by?: unknown }>;
        for (const m of Array.isArray(body) ? body : (body.data ?? [])) if (typeof m.owned_by === 'string') owners.add(m.owned_by.toLowerCase());
      } catch {
        // not JSON: a generic endpoint
      }
      return owners.has('vllm') ? 'vllm' : owners.has('sglang') ? 'sglang' : 'openai';
    })().catch((error: unknown) => {
      detected = null;
      throw error;
    });
    return detected;
  }

  /** vLLM and SGLang read the PEFT folder beside the GGUF; one this platform does not have is named before the server is asked. */
  async function peftFolder(adapter: AdapterRegistration, server: 'vllm' | 'sglang'): Promise<string> {
    const folder = peftAdapterDir(adapter.path);
    const files = ['adapter_config.json', 'adapter_model.safetensors'];
    const found = await Promise.all(files.map((name) => stat(path.join(folder, name)).then((info) => info.isFile(), () => false)));
    if (!found.every(Boolean)) {
      throw new AdapterLoadError(
        `${server === 'vllm' ? 'vLLM' : 'SGLang'} loads adapters in the Hugging Face PEFT layout, and ${adapter.name} has none: ${folder} ` +
          `should hold ${files.join(' and ')} (the bundled trainer writes them beside the GGUF adapter; an adapter trained before it did has only the GGUF: train it again)`,
      );
    }
    return folder;
  }

  async function loadOnce(adapter: AdapterRegistration): Promise<void> {
    const server = await kind();
    // The embedded llama.cpp server (and other OpenAI-compatible endpoints) load the GGUF; vLLM and SGLang the PEFT folder.
    const local = server === 'openai' ? adapter.path : await peftFolder(adapter, server);
    const lora_path = options.serverAdaptersDir ? path.join(options.serverAdaptersDir, path.basename(local)) : local;
    const where = `${adapter.name} (${lora_path})`;
    if (server === 'sglang') {
      const { status, text } = await send('POST', '/load_lora_adapter', { lora_name: adapter.name, lora_path });
      const message = bodyMessage(text);
      if (status === 200) return;
      // SGLang: 400 {"success": false, "error_message": "Failed to load LoRA adapter x because it is already loaded"}.
      if (status === 400 && /already loaded/i.test(message)) return;
      if (status === 404) {
        throw new AdapterLoadError(`SGLang at ${root} has no /load_lora_adapter: start it with --enable-lora (and --max-lora-rank, --lora-target-modules) to serve trained adapters`);
      }
      throw new AdapterLoadError(`SGLang at ${root} could not load adapter ${where}: ${message || `HTTP ${status}`}`);
    }
    const body: Record<string, string> = { lora_name: adapter.name, lora_path };
    if (options.sendBaseModel) body.base_model = adapter.baseModelId;
    const { status, text } = await send('POST', '/v1/load_lora_adapter', body);
    const message = bodyMessage(text);
    if (status >= 200 && status < 300) return;
    // vLLM: 400 "The lora adapter 'x' has already been loaded." (our names are unique per training).
    if (status === 400 && /already been loaded/i.test(message) && !/unload it first/i.test(message)) return;
    if (status === 404 && !/lora|adapter|model/i.test(message)) {
      throw new AdapterLoadError(
        server === 'vllm'
          ? `vLLM at ${root} does not load adapters at runtime (POST /v1/load_lora_adapter answered 404): start it with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`
          : `the endpoint at ${root} cannot load LoRA adapters (POST /v1/load_lora_adapter answered 404); set INFERENCE_SERVER=vllm or sglang if it is one of those`,
      );
    }
    throw new AdapterLoadError(`${server === 'vllm' ? 'vLLM' : 'the endpoint'} at ${root} could not load adapter ${where}: ${message || `HTTP ${status}`}`);
  }

  function load(adapter: AdapterRegistration): Promise<void> {
    known.set(adapter.name, Promise.resolve(adapter));
    const pending = loading.get(adapter.name);
    if (pending) return pending;
    const attempt = loadOnce(adapter)
      .then(() => {
        loaded.add(adapter.name);
      })
      .finally(() => loading.delete(adapter.name));
    loading.set(adapter.name, attempt);
    return attempt;
  }

  function adapterOf(model: string): Promise<AdapterRegistration | null> {
    let found = known.get(model);
    if (!found) {
      found = options.lookup ? options.lookup(model) : Promise.resolve(null);
      // A failed lookup is asked again next time.
      found.catch(() => known.delete(model));
      known.set(model, found);
    }
    return found;
  }

  function wrap(engine: InferenceEngine): InferenceEngine {
    async function named(input: CompletionRequest, adapter: AdapterRegistration): Promise<CompletionRequest> {
      if ((await kind()) !== 'sglang') return input;
      return { ...input, model: adapter.baseModelId, extraBody: { ...input.extraBody, lora_path: adapter.name } };
    }
    return {
      get label() {
        return engine.label;
      },
      listModels: () => engine.listModels(),
      async complete(input) {
        const adapter = await adapterOf(input.model);
        if (!adapter) return engine.complete(input);
        if (!loaded.has(adapter.name)) await load(adapter);
        const request = await named(input, adapter);
        try {
          return await engine.complete(request);
        } catch (error) {
          if (!isAdapterMissing(await kind(), error)) throw error;
          // The server forgot the adapter (restarted): load it again, once, and ask again.
          loaded.delete(adapter.name);
          await load(adapter);
          return engine.complete(request);
        }
      },
      async countTokens(model, text, signal) {
        // An adapter does not change the tokenizer: count with the base model's.
        const adapter = await adapterOf(model);
        return engine.countTokens(adapter ? adapter.baseModelId : model, text, signal);
      },
      close: () => engine.close(),
    };
  }

  return { kind, load, wrap };
}
