// A fake vLLM OpenAI-compatible server over real HTTP: /v1/models (adapters with their parent), runtime LoRA loading
// (VLLM_ALLOW_RUNTIME_LORA_UPDATING) of PEFT folders only, as vLLM reads them, adapters named by `model`, vLLM's error shapes, and faults (429, 5xx, a restart that forgets adapters).
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

export interface FakeVllmOptions {
  /** The served base model name (`vllm serve ... --served-model-name`). */
  model: string;
  generator: Generator;
  /** VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; off, the load and unload routes do not exist (404). Default on. */
  runtimeLoraUpdating?: boolean;
  /** Sent as `Authorization: Bearer` by clients (`vllm serve --api-key`); unset = no auth. */
  apiKey?: string;
}

export interface FakeVllm {
  /** `http://127.0.0.1:<port>` (INFERENCE_URL). */
  root: string;
  faults: ServerFaults;
  requests: RecordedRequest[];
  /** Adapters loaded now, by name. */
  adapters(): LoadedAdapter[];
  /** The adapter (or null: the base) each completion was generated with, in order. */
  completions: Array<{ model: string; adapter: string | null; status: number }>;
  /** A server restart: every adapter loaded at runtime is forgotten. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** vLLM's ErrorResponse: `{"error": {"message", "type", "param", "code"}}`. */
function error(status: number, type: string, message: string): [number, unknown] {
  return [status, { error: { message, type, param: null, code: status } }];
}

export async function startFakeVllm(options: FakeVllmOptions): Promise<FakeVllm> {
  const faults: ServerFaults = { ...NO_FAULTS };
  const requests: RecordedRequest[] = [];
  const completions: FakeVllm['completions'] = [];
  const loras = new Map<string, LoadedAdapter>();
  const runtime = options.runtimeLoraUpdating ?? true;
  const created = Math.floor(Date.now() / 1000);

  async function handle(method: string, path: string, body: Record<string, unknown> | null): Promise<[number, unknown, Record<string, string>?]> {
    if (faults.rateLimitNext > 0) {
      faults.rateLimitNext -= 1;
      return [...error(429, 'RateLimitError', 'Too many requests'), { 'retry-after': String(faults.retryAfterSeconds) }];
    }
    if (faults.serverErrorNext > 0) {
      faults.serverErrorNext -= 1;
      return error(faults.serverErrorStatus, 'InternalServerError', 'The engine is overloaded');
    }
    const route = `${method} ${path}`;
    if (route === 'GET /v1/models') {
      const card = (id: string, root: string, parent: string | null) => ({ id, object: 'model', created, owned_by: 'vllm', root, parent, max_model_len: 512, permission: [] });
      return [200, { object: 'list', data: [card(options.model, options.model, null), ...[...loras.values()].map((l) => card(l.name, l.path, options.model))] }];
    }
    if (runtime && route === 'POST /v1/load_lora_adapter') {
      const name = typeof body?.lora_name === 'string' ? body.lora_name : '';
      const path = typeof body?.lora_path === 'string' ? body.lora_path : '';
      if (!name || !path) return error(400, 'InvalidUserInput', "Both 'lora_name' and 'lora_path' must be provided.");
      if (loras.has(name)) return error(400, 'InvalidUserInput', `The lora adapter '${name}' has already been loaded.`);
      // vLLM: a missing adapter_config.json is FileNotFoundError, answered 404 "No adapter found"; other problems are 400s.
      const peft = await peftFolderProblem(path);
      if (peft?.missing) return error(404, 'NotFoundError', `Loading lora ${name} failed: No adapter found for ${path}`);
      if (peft) return error(400, 'BadRequestError', peft.message);
      const problem = await options.generator.load({ name, path });
      if (problem) return /No adapter found/.test(problem) ? error(404, 'NotFoundError', `Loading lora ${name} failed: ${problem}`) : error(400, 'BadRequestError', problem);
      loras.set(name, { name, path });
      return [200, `Success: LoRA adapter '${name}' added successfully.`];
    }
    if (runtime && route === 'POST /v1/unload_lora_adapter') {
      const name = typeof body?.lora_name === 'string' ? body.lora_name : '';
      if (!loras.has(name)) return error(404, 'NotFoundError', `The lora adapter '${name}' cannot be found.`);
      loras.delete(name);
      await options.generator.unload(name);
      return [200, `Success: LoRA adapter '${name}' removed successfully.`];
    }
    if (route === 'POST /v1/completions' || route === 'POST /v1/chat/completions') {
      const model = String(body?.model ?? '');
      if (faults.restartBeforeAdapterRequest && loras.has(model)) {
        faults.restartBeforeAdapterRequest = false;
        await restart();
      }
      const adapter = loras.get(model) ?? null;
      if (!adapter && model !== options.model) return error(404, 'NotFoundError', `The model \`${model}\` does not exist.`);
      const result = await options.generator.complete(path, { ...body, model: options.model }, adapter);
      completions.push({ model, adapter: adapter?.name ?? null, status: result[0] });
      // A request in flight when the server restarted loses its connection on a real server: a 503 here, retried by clients.
      if (result[0] !== 200 && adapter && !loras.has(adapter.name)) return error(503, 'InternalServerError', 'The server restarted while generating');
      return result;
    }
    if (route === 'POST /tokenize') {
      const model = String(body?.model ?? options.model);
      if (!loras.has(model) && model !== options.model) return error(404, 'NotFoundError', `The model \`${model}\` does not exist.`);
      return options.generator.tokenize(body ?? {});
    }
    // FastAPI's answer for a route that does not exist.
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
      let result: [number, unknown, Record<string, string>?];
      if (options.apiKey && request.headers.authorization !== `Bearer ${options.apiKey}`) result = [401, { error: 'Unauthorized' }];
      else result = await handle(request.method ?? 'GET', path, body).catch((e: unknown) => error(500, 'InternalServerError', String(e)));
      const [status, payload, headers] = result;
      requests.push({ method: request.method ?? 'GET', path, status, body });
      const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
      response.writeHead(status, { 'content-type': typeof payload === 'string' ? 'text/plain; charset=utf-8' : 'application/json', ...headers });
      response.end(text);
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
