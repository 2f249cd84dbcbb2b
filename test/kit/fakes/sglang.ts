// A fake SGLang server over real HTTP: /v1/models, /get_model_info, /load_lora_adapter (PEFT folders only) and /unload_lora_adapter, adapters named by
// `lora_path` or `model: "base:adapter"` (first colon; the model form wins), SGLang's error shapes, and faults (429, 5xx, a restart that forgets adapters).
import {
  NO_FAULTS,
  listen,
  peftFolderProblem,
  readJson,
  type Generator,
  type LoadedAdapter,
  type RecordedRequest,
  type ServerFaults,
} from './inference-backend.js';

export interface FakeSglangOptions {
  /** The served model name (`--served-model-name`, else the model path). */
  model: string;
  generator: Generator;
}

export interface FakeSglang {
  /** `http://127.0.0.1:<port>` (INFERENCE_URL). */
  root: string;
  faults: ServerFaults;
  requests: RecordedRequest[];
  adapters(): LoadedAdapter[];
  /** The `model` field and the adapter (or null: the base) each completion was generated with, in order. */
  completions: Array<{ model: string; adapter: string | null; status: number }>;
  /** A server restart: every adapter loaded at runtime is forgotten. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** SGLang's OpenAI ErrorResponse, flat: `{"object": "error", "message", "type", "param", "code"}`. */
function error(status: number, type: string, message: string): [number, unknown] {
  return [status, { object: 'error', message, type, param: null, code: status }];
}

/** SGLang's `model` parsing: `base:adapter` split at the first colon, both parts trimmed; an empty adapter is none. */
export function parseModel(model: string): { base: string; adapter: string | null } {
  const at = model.indexOf(':');
  if (at < 0) return { base: model.trim(), adapter: null };
  const adapter = model.slice(at + 1).trim();
  return { base: model.slice(0, at).trim(), adapter: adapter === '' ? null : adapter };
}

export async function startFakeSglang(options: FakeSglangOptions): Promise<FakeSglang> {
  const faults: ServerFaults = { ...NO_FAULTS };
  const requests: RecordedRequest[] = [];
  const completions: FakeSglang['completions'] = [];
  const loras = new Map<string, LoadedAdapter>();
  const loaded = () => Object.fromEntries([...loras.values()].map((l) => [l.name, l.path]));
  const keys = () => `dict_keys([${[...loras.keys()].map((k) => `'${k}'`).join(', ')}])`;

  async function handle(method: string, path: string, body: Record<string, unknown> | null): Promise<[number, unknown, Record<string, string>?]> {
    if (faults.rateLimitNext > 0) {
      faults.rateLimitNext -= 1;
      return [...error(429, 'RateLimitError', 'Too many requests'), { 'retry-after': String(faults.retryAfterSeconds) }];
    }
    if (faults.serverErrorNext > 0) {
      faults.serverErrorNext -= 1;
      return error(faults.serverErrorStatus, 'InternalServerError', 'The scheduler is overloaded');
    }
    const route = `${method} ${path}`;
    if (route === 'GET /v1/models') {
      return [200, { object: 'list', data: [{ id: options.model, object: 'model', created: Math.floor(Date.now() / 1000), owned_by: 'sglang', root: options.model, max_model_len: 512 }] }];
    }
    if (route === 'GET /get_model_info') {
      return [200, { model_path: options.model, tokenizer_path: options.model, is_generation: true, preferred_sampling_params: null, weight_version: 'default' }];
    }
    if (route === 'POST /load_lora_adapter') {
      const name = typeof body?.lora_name === 'string' ? body.lora_name : '';
      const path = typeof body?.lora_path === 'string' ? body.lora_path : '';
      const fail = (message: string): [number, unknown] => [400, { success: false, error_message: message, loaded_adapters: loaded() }];
      if (!name || !path) return error(422, 'RequestValidationError', 'lora_name and lora_path are required');
      if (loras.has(name)) return fail(`Failed to load LoRA adapter ${name} because it is already loaded`);
      const peft = await peftFolderProblem(path);
      if (peft) return fail(`Failed to load LoRA adapter ${name}: ${peft.message}`);
      const problem = await options.generator.load({ name, path });
      if (problem) return fail(problem);
      loras.set(name, { name, path });
      return [200, { success: true, error_message: null, loaded_adapters: loaded() }];
    }
    if (route === 'POST /unload_lora_adapter') {
      const name = typeof body?.lora_name === 'string' ? body.lora_name : '';
      if (!loras.has(name)) return [400, { success: false, error_message: `LoRA adapter ${name} is not loaded`, loaded_adapters: loaded() }];
      loras.delete(name);
      await options.generator.unload(name);
      return [200, { success: true, error_message: null, loaded_adapters: loaded() }];
    }
    if (route === 'POST /v1/completions' || route === 'POST /v1/chat/completions') {
      const model = String(body?.model ?? 'default');
      const parsed = parseModel(model);
      const explicit = typeof body?.lora_path === 'string' && body.lora_path !== '' ? body.lora_path : null;
      const name = parsed.adapter ?? explicit;
      if (faults.restartBeforeAdapterRequest && name !== null && loras.has(name)) {
        faults.restartBeforeAdapterRequest = false;
        await restart();
      }
      let adapter: LoadedAdapter | null = null;
      if (name !== null) {
        adapter = loras.get(name) ?? null;
        if (!adapter) return error(400, 'BadRequestError', `The following requested LoRA adapters are not loaded: ${name}\nLoaded adapters: ${keys()}.`);
      }
      const { lora_path: _ignored, ...rest } = body ?? {};
      const result = await options.generator.complete(path, { ...rest, model: options.model }, adapter);
      completions.push({ model, adapter: adapter?.name ?? null, status: result[0] });
      // A request in flight when the server restarted loses its connection on a real server: a 503 here, retried by clients.
      if (result[0] !== 200 && adapter && !loras.has(adapter.name)) return error(503, 'InternalServerError', 'The server restarted while generating');
      return result;
    }
    if (route === 'POST /tokenize' || route === 'POST /v1/tokenize') return options.generator.tokenize(body ?? {});
    return [404, { detail: 'Not Found' }];
  }

  async function restart(): Promise<void> {
    for (const name of loras.keys()) await options.generator.unload(name);
    loras.clear();
  }

  const server = await listen((request, response) => {
    void (async () => {
      const path = new URL(request.url ?? '/', 'http://fake').pathname;
      const body = await readJson(request);
      const [status, payload, headers] = await handle(request.method ?? 'GET', path, body).catch((e: unknown) => error(500, 'InternalServerError', String(e)));
      requests.push({ method: request.method ?? 'GET', path, status, body });
      response.writeHead(status, { 'content-type': 'application/json', ...headers });
      response.end(JSON.stringify(payload));
    })();
  });

  return {
    root: server.root,
    faults,
    requests,
    completions,
    adapters: () => [...loras.values()],
    restart,
    close: server.close,
  };
}
