// What does the generating behind the vLLM and SGLang fakes: a real llama.cpp server (GGUF model and adapters) or a scripted answer.
import http from 'node:http';
import { stat } from 'node:fs/promises';

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
      const [status, json] = await post('/v1/load_lora_adapter', { lora_name: adapter.name, lora_path: adapter.path, base_model: backend.model });
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
