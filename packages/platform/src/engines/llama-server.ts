// Embedded OpenAI-compatible inference server: every GGUF in a folder, plus LoRA adapters loaded at run time, served by node-llama-cpp on loopback.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { getLlama, LlamaChat, LlamaCompletion, LlamaLogLevel, readGgufFileInfo, type Llama, type LlamaContext, type LlamaModel, type Token } from 'node-llama-cpp';
import { z } from 'zod';
import { chatHistoryOf, chatTemplateOf, chatWrapperFor, type ChatMessage } from './chat-form.js';

export interface LlamaServerLogger {
  debug?(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface LlamaServerOptions {
  modelsDir: string;
  /** CPU threads per evaluation; set explicitly (node-llama-cpp's default was far slower here). */
  threads: number;
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Tokens per sequence; default: the model's training context, at most 4096. */
  contextSize?: number;
  /** Requests generating at once (sequences per context); further requests wait in a bounded queue. */
  parallel?: number;
  /** Requests allowed to wait for a slot before the server answers 503. */
  maxQueue?: number;
  logger?: LlamaServerLogger;
  /**
   * Told, after each generation, the tokens its sequence evaluated (the prompt, then the generated
   * tokens fed back) and the tokens it generated: what the model really read, for checks and diagnostics.
   */
  onEvaluated?(evaluation: Evaluation): void;
}

/** What one generation evaluated, as {@link LlamaServerOptions.onEvaluated} is told. */
export interface Evaluation {
  /** The request's `model` (a base model's id or an adapter's name). */
  model: string;
  route: '/v1/completions' | '/v1/chat/completions';
  /** What was asked: a completion's prompt, or a chat request's messages. */
  input: string | ChatMessage[];
  /** The sequence's tokens once the generation ended: the prompt's, then generated ones. */
  evaluated: Token[];
  generated: Token[];
}

export interface LlamaServer {
  /** Base URL, e.g. http://127.0.0.1:PORT; OpenAI routes are under /v1. */
  url: string;
  /** The engine as messages name it, e.g. "llama.cpp, CPU, 2 threads". */
  label: string;
  close(): Promise<void>;
}

interface GgufEntry {
  id: string;
  path: string;
  mtimeMs: number;
  size: number;
  isAdapter: boolean;
  chatTemplate: string | undefined;
  trainContextSize: number | undefined;
}

interface AdapterEntry {
  name: string;
  path: string;
  base: string;
  created: number;
}

/** A failure answered in OpenAI's error shape. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const invalid = (message: string, code = 'invalid_request') => new ApiError(400, 'invalid_request_error', code, message);
const MAX_BODY_BYTES = 4_000_000;
const MAX_CONTEXT_DEFAULT = 4096;

const stopSchema = z.union([z.string(), z.array(z.string()).max(16)]).nullish();
const sampling = {
  model: z.string().min(1),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  stop: stopSchema,
  n: z.literal(1).nullish(),
  stream: z.literal(false).nullish(),
};
const CompletionRequest = z.object({ ...sampling, prompt: z.union([z.string(), z.array(z.string()).length(1)]) });
const ChatRequest = z.object({
  ...sampling,
  max_completion_tokens: z.number().int().positive().nullish(),
  messages: z
    .array(z.object({ role: z.enum(['system', 'developer', 'user', 'assistant']), content: z.union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() }))]) }))
    .min(1),
});
const TokenizeRequest = z.object({ model: z.string().min(1), prompt: z.string(), add_special_tokens: z.boolean().optional() });
const LoadLoraRequest = z.object({ lora_name: z.string().min(1).max(200), lora_path: z.string().min(1), base_model: z.string().min(1).optional() });
const UnloadLoraRequest = z.object({ lora_name: z.string().min(1) });

function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');
}

function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw invalid(`invalid body: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** A counting semaphore whose waiting line is bounded: past it a request is refused with 503. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(
    size: number,
    private readonly maxQueue: number,
  ) {
    this.free = size;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    if (this.waiting.length >= this.maxQueue) throw new ApiError(503, 'server_error', 'overloaded', 'the server is busy: too many requests are waiting; retry later');
    await new Promise<void>((resolveWait) => this.waiting.push(resolveWait));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

/**
 * Starts the server. Models load on first use; `GET /v1/models` rescans the folder each time, so a
 * GGUF copied in later is served without a restart.
 */
export async function startLlamaServer(opts: LlamaServerOptions): Promise<LlamaServer> {
  const modelsDir = resolve(opts.modelsDir);
  const parallel = Math.max(1, opts.parallel ?? 2);
  const host = opts.host ?? '127.0.0.1';
  const logger = opts.logger;
  const llama: Llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: opts.threads });
  const label = `llama.cpp, CPU, ${opts.threads} thread${opts.threads === 1 ? '' : 's'}`;
  const slots = new Slots(parallel, opts.maxQueue ?? 1024);

  const ggufs = new Map<string, GgufEntry>();
  const adapters = new Map<string, AdapterEntry>();
  const models = new Map<string, Promise<LlamaModel>>();
  const contexts = new Map<string, Promise<LlamaContext>>();
  let closed = false;
  /** Aborted on close: generations under way stop, so nothing runs on a disposed model. */
  const shutdown = new AbortController();
  const inFlight = new Set<Promise<unknown>>();

  async function inspect(path: string): Promise<GgufEntry> {
    const info = await stat(path);
    const id = basename(path).replace(/\.gguf$/i, '');
    const known = [...ggufs.values()].find((entry) => entry.path === path);
    if (known && known.mtimeMs === info.mtimeMs && known.size === info.size) return known;
    let meta: Awaited<ReturnType<typeof readGgufFileInfo>>;
    try {
      meta = await readGgufFileInfo(path, { readTensorInfo: false, logWarnings: false });
    } catch (err) {
      throw invalid(`${basename(path)} is not a readable GGUF file: ${(err as Error).message}`, 'invalid_gguf');
    }
    const metadata = meta.metadata as unknown as {
      general?: { type?: string; architecture?: string };
      [arch: string]: unknown;
    };
    const arch = metadata.general?.architecture;
    if (typeof arch !== 'string' || arch === '') throw invalid(`${basename(path)} is not a usable GGUF file: it names no general.architecture`, 'invalid_gguf');
    const archMeta = arch ? (metadata[arch] as { context_length?: number } | undefined) : undefined;
    return {
      id,
      path,
      mtimeMs: info.mtimeMs,
      size: info.size,
      isAdapter: metadata.general?.type === 'adapter',
      chatTemplate: chatTemplateOf(metadata),
      trainContextSize: archMeta?.context_length,
    };
  }

  /** Rescans the folder: the base models by id (file name without .gguf). */
  async function scan(): Promise<Map<string, GgufEntry>> {
    let names: string[];
    try {
      names = await readdir(modelsDir);
    } catch (err) {
      throw new ApiError(503, 'server_error', 'models_dir_unreadable', `MODELS_DIR ${modelsDir} cannot be read: ${(err as Error).message}`);
    }
    const found = new Map<string, GgufEntry>();
    for (const name of names.filter((n) => n.toLowerCase().endsWith('.gguf')).sort()) {
      try {
        const entry = await inspect(join(modelsDir, name));
        found.set(entry.id, entry);
      } catch (err) {
        logger?.warn({ file: name, err: (err as Error).message }, 'skipping a GGUF file that cannot be read');
      }
    }
    for (const [id, entry] of ggufs) {
      if (found.get(id)?.path === entry.path && found.get(id)?.mtimeMs === entry.mtimeMs) continue;
      ggufs.delete(id);
      void dropModel(id);
    }
    for (const [id, entry] of found) ggufs.set(id, entry);
    return new Map([...found].filter(([, entry]) => !entry.isAdapter));
  }

  async function dropModel(id: string): Promise<void> {
    const model = models.get(id);
    models.delete(id);
    for (const served of [id, ...[...adapters.values()].filter((a) => a.base === id).map((a) => a.name)]) await dropContext(served);
    if (model) await (await model.catch(() => undefined))?.dispose();
  }

  async function dropContext(served: string): Promise<void> {
    const context = contexts.get(served);
    contexts.delete(served);
    if (context) await (await context.catch(() => undefined))?.dispose();
  }

  async function baseEntry(id: string): Promise<GgufEntry> {
    let entry = ggufs.get(id);
    if (!entry || entry.isAdapter) entry = (await scan()).get(id);
    if (!entry) throw new ApiError(404, 'invalid_request_error', 'model_not_found', `The model \`${id}\` does not exist.`);
    return entry;
  }

  /** Resolves a request's `model` to its base GGUF and, for an adapter name, the adapter. */
  async function resolveModel(id: string): Promise<{ base: GgufEntry; adapter?: AdapterEntry }> {
    const adapter = adapters.get(id);
    if (adapter) return { base: await baseEntry(adapter.base), adapter };
    return { base: await baseEntry(id) };
  }

  function loadModel(base: GgufEntry): Promise<LlamaModel> {
    let model = models.get(base.id);
    if (!model) {
      model = llama.loadModel({ modelPath: base.path });
      models.set(base.id, model);
      model.catch(() => models.delete(base.id));
    }
    return model;
  }

  function sequenceSize(base: GgufEntry): number {
    return opts.contextSize ?? Math.min(base.trainContextSize ?? MAX_CONTEXT_DEFAULT, MAX_CONTEXT_DEFAULT);
  }

  function getContext(base: GgufEntry, adapter: AdapterEntry | undefined): Promise<LlamaContext> {
    const served = adapter?.name ?? base.id;
    let context = contexts.get(served);
    if (!context) {
      context = loadModel(base).then((model) =>
        model.createContext({
          contextSize: sequenceSize(base),
          sequences: parallel,
          threads: opts.threads,
          ...(adapter ? { lora: { adapters: [{ filePath: adapter.path }] } } : {}),
        }),
      );
      contexts.set(served, context);
      context.catch(() => contexts.delete(served));
    }
    return context;
  }

  /** Runs one generation on a free sequence of the served model's context, within the server's slots. */
  async function withSequence<T>(base: GgufEntry, adapter: AdapterEntry | undefined, run: (context: LlamaContext, model: LlamaModel) => Promise<T>): Promise<T> {
    await slots.acquire();
    const work = (async () => {
      if (closed) throw new ApiError(503, 'server_error', 'shutting_down', 'the server is shutting down');
      const started = performance.now();
      const context = await getContext(base, adapter);
      const result = await run(context, await loadModel(base));
      // The engine's own time per request (a slot held), which benches set against the platform's wall time.
      logger?.debug?.({ model: adapter?.name ?? base.id, engineMs: Math.round(performance.now() - started) }, 'inference request served');
      return result;
    })();
    inFlight.add(work);
    try {
      return await work;
    } finally {
      inFlight.delete(work);
      slots.release();
    }
  }

  function budget(promptTokens: number, maxTokens: number | null | undefined, contextSize: number): number {
    const wanted = maxTokens ?? 16;
    if (promptTokens + wanted > contextSize) {
      throw invalid(
        `This model's maximum context length is ${contextSize} tokens. However, you requested ${promptTokens + wanted} tokens (${promptTokens} in the prompt, ${wanted} for the completion).`,
        'context_length_exceeded',
      );
    }
    return wanted;
  }

  function stops(stop: z.infer<typeof stopSchema>): string[] | undefined {
    if (stop == null) return undefined;
    const list = (Array.isArray(stop) ? stop : [stop]).filter((s) => s !== '');
    return list.length > 0 ? list : undefined;
  }

  function finishReason(stopReason: string): 'length' | 'stop' {
    return stopReason === 'maxTokens' ? 'length' : 'stop';
  }

  /**
   * Stop strings as OpenAI defines them: the text ends right before the first one, even inside a
   * token (node-llama-cpp's stop triggers drop the whole token). Generation is aborted once one shows.
   */
  function stopWatch(stop: z.infer<typeof stopSchema>) {
    const list = stops(stop) ?? [];
    const controller = new AbortController();
    const onShutdown = () => controller.abort();
    if (shutdown.signal.aborted) controller.abort();
    else shutdown.signal.addEventListener('abort', onShutdown, { once: true });
    let text = '';
    const generated: Token[] = [];
    let cut = -1;
    return {
      options: {
        signal: controller.signal,
        stopOnAbortSignal: true,
        onTextChunk: (chunk: string) => {
          text += chunk;
          if (cut >= 0 || list.length === 0) return;
          const found = list.map((s) => text.indexOf(s)).filter((i) => i >= 0);
          if (found.length > 0) {
            cut = Math.min(...found);
            controller.abort();
          }
        },
        onToken: (tokens: readonly Token[]) => {
          generated.push(...tokens);
        },
      },
      /** Stops listening for the shutdown; call once the generation is over. */
      release() {
        shutdown.signal.removeEventListener('abort', onShutdown);
      },
      result(response: string, stopReason: string) {
        if (shutdown.signal.aborted && cut < 0) throw new ApiError(503, 'server_error', 'shutting_down', 'the server shut down during this generation; retry');
        if (cut >= 0) return { text: text.slice(0, cut), finish: 'stop' as const, generated: generated.length };
        return { text: response, finish: finishReason(stopReason), generated: generated.length };
      },
      /** The generation's tokens, for {@link LlamaServerOptions.onEvaluated}. */
      tokens(): Token[] {
        return [...generated];
      },
    };
  }

  async function completions(body: unknown): Promise<object> {
    const request = parse(CompletionRequest, body);
    const prompt = Array.isArray(request.prompt) ? request.prompt[0]! : request.prompt;
    const { base, adapter } = await resolveModel(request.model);
    return withSequence(base, adapter, async (context, model) => {
      const promptTokens = model.tokenize(prompt, false).length + (model.tokens.bos !== null && model.tokens.shouldPrependBosToken ? 1 : 0);
      const maxTokens = budget(promptTokens, request.max_tokens, context.contextSize);
      const sequence = context.getSequence();
      try {
        const completion = new LlamaCompletion({ contextSequence: sequence });
        const watch = stopWatch(request.stop);
        const meta = await completion
          .generateCompletionWithMeta(prompt, {
            maxTokens,
            temperature: request.temperature ?? 1,
            ...(request.top_p != null ? { topP: request.top_p } : {}),
            ...(request.seed != null ? { seed: request.seed } : {}),
            ...watch.options,
          })
          .finally(() => watch.release());
        const { text, finish, generated } = watch.result(meta.response, meta.metadata.stopReason);
        opts.onEvaluated?.({ model: request.model, route: '/v1/completions', input: prompt, evaluated: [...sequence.contextTokens], generated: watch.tokens() });
        return {
          id: `cmpl-${crypto.randomUUID()}`,
          object: 'text_completion',
          created: Math.floor(Date.now() / 1000),
          model: request.model,
          choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
          usage: { prompt_tokens: promptTokens, completion_tokens: generated, total_tokens: promptTokens + generated },
        };
      } finally {
        await sequence.dispose();
      }
    });
  }

  async function chatCompletions(body: unknown): Promise<object> {
    const request = parse(ChatRequest, body);
    const { base, adapter } = await resolveModel(request.model);
    if (!base.chatTemplate) {
      throw invalid(
        `The model \`${request.model}\` has no chat template (its GGUF has no tokenizer.chat_template); send it plain prompts on /v1/completions instead.`,
        'no_chat_template',
      );
    }
    const template = base.chatTemplate;
    const messages: ChatMessage[] = request.messages.map((message) => ({
      role: message.role,
      text: typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join(''),
    }));
    const history = chatHistoryOf(messages);
    return withSequence(base, adapter, async (context) => {
      const sequence = context.getSequence();
      try {
        const chat = new LlamaChat({ contextSequence: sequence, chatWrapper: chatWrapperFor(template) });
        const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? undefined;
        const watch = stopWatch(request.stop);
        const meta = await chat
          .generateResponse(history, {
            ...(maxTokens != null ? { maxTokens } : {}),
            temperature: request.temperature ?? 1,
            ...(request.top_p != null ? { topP: request.top_p } : {}),
            ...(request.seed != null ? { seed: request.seed } : {}),
            ...watch.options,
          })
          .finally(() => watch.release());
        const { text, finish, generated } = watch.result(meta.response, meta.metadata.stopReason);
        opts.onEvaluated?.({ model: request.model, route: '/v1/chat/completions', input: messages, evaluated: [...sequence.contextTokens], generated: watch.tokens() });
        const used = sequence.tokenMeter.getState();
        const promptTokens = Math.max(0, used.usedInputTokens - Math.max(0, generated - 1));
        return {
          id: `chatcmpl-${crypto.randomUUID()}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: request.model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }],
          usage: { prompt_tokens: promptTokens, completion_tokens: generated, total_tokens: promptTokens + generated },
        };
      } finally {
        await sequence.dispose();
      }
    });
  }

  async function listModels(): Promise<object> {
    const bases = await scan();
    const created = (entry: GgufEntry) => Math.floor(entry.mtimeMs / 1000);
    const data: object[] = [...bases.values()].map((entry) => ({
      id: entry.id,
      object: 'model',
      created: created(entry),
      owned_by: 'llama.cpp',
      root: entry.id,
      parent: null,
      max_model_len: sequenceSize(entry),
      chat_template: entry.chatTemplate !== undefined,
    }));
    for (const adapter of adapters.values()) {
      const base = bases.get(adapter.base);
      if (!base) continue;
      data.push({
        id: adapter.name,
        object: 'model',
        created: adapter.created,
        owned_by: 'llama.cpp',
        root: adapter.path,
        parent: adapter.base,
        max_model_len: sequenceSize(base),
        chat_template: base.chatTemplate !== undefined,
      });
    }
    return { object: 'list', data };
  }

  async function tokenize(body: unknown): Promise<object> {
    const request = parse(TokenizeRequest, body);
    const { base } = await resolveModel(request.model);
    const model = await loadModel(base);
    const special = request.add_special_tokens ?? true;
    const tokens = [...model.tokenize(request.prompt, false)];
    if (special && model.tokens.bos !== null && model.tokens.shouldPrependBosToken) tokens.unshift(model.tokens.bos);
    return { count: tokens.length, max_model_len: sequenceSize(base), tokens };
  }

  async function loadLora(body: unknown): Promise<string> {
    const request = parse(LoadLoraRequest, body);
    const path = resolve(request.lora_path);
    const bases = await scan();
    if (bases.has(request.lora_name)) throw invalid(`The name \`${request.lora_name}\` is already a base model's id; choose another lora_name.`);
    let baseId = request.base_model;
    if (baseId === undefined) {
      if (bases.size !== 1) throw invalid(`base_model is required: ${bases.size} base models are served (${[...bases.keys()].join(', ') || 'none'}).`);
      baseId = [...bases.keys()][0]!;
    }
    const base = bases.get(baseId);
    if (!base) throw new ApiError(404, 'invalid_request_error', 'model_not_found', `The base model \`${baseId}\` does not exist.`);
    const existing = adapters.get(request.lora_name);
    if (existing) {
      if (existing.path === path && existing.base === baseId) return `Success: LoRA adapter '${request.lora_name}' is already loaded.`;
      throw invalid(`The lora adapter '${request.lora_name}' has already been loaded from ${existing.path} on ${existing.base}; unload it first.`, 'lora_already_loaded');
    }
    let info: GgufEntry;
    try {
      info = await inspect(path);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw invalid(`lora_path ${request.lora_path} cannot be read: ${(err as Error).message}`, 'invalid_lora_path');
    }
    if (!info.isAdapter) throw invalid(`lora_path ${request.lora_path} is a GGUF model, not a LoRA adapter (general.type is not "adapter").`, 'invalid_lora_path');
    const adapter: AdapterEntry = { name: request.lora_name, path, base: baseId, created: Math.floor(Date.now() / 1000) };
    adapters.set(adapter.name, adapter);
    try {
      await getContext(base, adapter);
    } catch (err) {
      adapters.delete(adapter.name);
      await dropContext(adapter.name);
      throw invalid(`The adapter ${request.lora_path} cannot be applied to \`${baseId}\`: ${(err as Error).message}`, 'invalid_lora_adapter');
    }
    logger?.info({ lora: adapter.name, base: baseId, path }, 'LoRA adapter loaded');
    return `Success: LoRA adapter '${request.lora_name}' added successfully.`;
  }

  async function unloadLora(body: unknown): Promise<string> {
    const request = parse(UnloadLoraRequest, body);
    if (!adapters.has(request.lora_name)) throw new ApiError(404, 'invalid_request_error', 'lora_not_found', `The lora adapter '${request.lora_name}' cannot be found.`);
    adapters.delete(request.lora_name);
    await dropContext(request.lora_name);
    return `Success: LoRA adapter '${request.lora_name}' removed successfully.`;
  }

  async function readJson(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) throw new ApiError(413, 'invalid_request_error', 'body_too_large', `the request body is over ${MAX_BODY_BYTES} bytes`);
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (text.trim() === '') throw invalid('the request body is empty; send JSON');
    try {
      return JSON.parse(text);
    } catch {
      throw invalid('the request body is not valid JSON');
    }
  }

  const routes: Record<string, (body: unknown) => Promise<object | string>> = {
    'POST /v1/completions': completions,
    'POST /v1/chat/completions': chatCompletions,
    'POST /tokenize': tokenize,
    'POST /v1/load_lora_adapter': loadLora,
    'POST /v1/unload_lora_adapter': unloadLora,
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    const method = req.method ?? 'GET';
    try {
      if (closed) throw new ApiError(503, 'server_error', 'shutting_down', 'the server is shutting down');
      let result: object | string;
      if (method === 'GET' && path === '/v1/models') result = await listModels();
      else if (method === 'GET' && (path === '/health' || path === '')) result = { status: 'ok', engine: label };
      else {
        const route = routes[`${method} ${path}`];
        if (!route) throw new ApiError(404, 'invalid_request_error', 'not_found', `no route ${method} ${path}`);
        result = await route(await readJson(req));
      }
      if (typeof result === 'string') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(result);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
      }
    } catch (err) {
      const apiError = err instanceof ApiError ? err : new ApiError(500, 'server_error', 'internal_error', `inference failed: ${(err as Error).message}`);
      if (!(err instanceof ApiError)) logger?.error({ err: (err as Error).message, path }, 'inference request failed');
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (apiError.status === 503) headers['retry-after'] = '1';
      if (!res.headersSent) res.writeHead(apiError.status, headers);
      res.end(JSON.stringify({ error: { message: apiError.message, type: apiError.type, code: apiError.code } }));
    }
  }

  const server = createServer((req, res) => void handle(req, res));
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolveListen());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger?.info({ url, modelsDir, engine: label }, 'embedded inference server listening');

  return {
    url,
    label,
    async close() {
      if (closed) return;
      closed = true;
      shutdown.abort();
      await Promise.allSettled([...inFlight]);
      await new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeIdleConnections();
      });
      await llama.dispose();
    },
  };
}
