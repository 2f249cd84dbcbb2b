// The inference port and its one implementation: an OpenAI-compatible HTTP client (embedded llama.cpp, vLLM, SGLang, Ollama, hosted).
import { Agent, request, type Dispatcher } from 'undici';
import { z } from 'zod';
import { describeZodError } from '@verdict/contract/contract';
import { parseRetryAfter } from '@verdict/contract/http-client';
import { sleep } from '../sleep.js';

export type PromptStyle = 'chat' | 'completion';

export interface InferenceModel {
  id: string;
  /** The base model id when this entry is a LoRA adapter served on top of it (vLLM's `parent`). */
  parent: string | null;
  /** Whether the model has a chat template, when the endpoint says so (the embedded server's `chat_template`). */
  chatTemplate: boolean | null;
  /** Parameter count, when the endpoint says so (llama-server's `meta.n_params`). */
  params: number | null;
}

export interface CompletionRequest {
  model: string;
  prompt: string;
  maxTokens: number;
  stop?: string[];
  signal?: AbortSignal;
  /** Fields added to the request body (SGLang's `lora_path`). */
  extraBody?: Record<string, unknown>;
}

export interface CompletionResult {
  text: string;
  finishReason: string | null;
  promptTokens: number;
  completionTokens: number;
  /** Whether the token counts came from the endpoint's `usage` (false: estimated, see {@link estimateTokens}). */
  usageReported: boolean;
  style: PromptStyle;
}

export interface TokenCount {
  count: number;
  /** False when the endpoint has no `/tokenize` and the count is {@link estimateTokens}'s. */
  exact: boolean;
}

/** The inference port: what a run needs from an engine. */
export interface InferenceEngine {
  /** Named in every message about work it did, e.g. "llama.cpp, CPU, 2 threads". */
  readonly label: string;
  listModels(): Promise<InferenceModel[]>;
  /** One greedy completion (temperature 0), chat or plain completion style per model. */
  complete(input: CompletionRequest): Promise<CompletionResult>;
  /** Tokens of `text` alone (no special tokens) in `model`'s tokenizer. */
  countTokens(model: string, text: string, signal?: AbortSignal): Promise<TokenCount>;
  close(): Promise<void>;
}

export type InferenceErrorCode = 'timeout' | 'network' | 'rate_limited' | 'server_error' | 'rejected' | 'malformed';

/** A failed inference call; `retryable` ones were retried before being thrown. */
export class InferenceError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly code: InferenceErrorCode,
    message: string,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'InferenceError';
    this.retryable = code === 'timeout' || code === 'network' || code === 'rate_limited' || code === 'server_error';
  }
}

/**
 * Token estimate used when an endpoint cannot count: one token per 3 UTF-8 bytes, rounded up.
 * Tokenizers of current models average 3.5-4.5 bytes a token on English text, so this errs high,
 * which is the safe side for a generation budget.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 3);
}

/**
 * The generation budget of a question: enough for the expected answer plus slack for a leading
 * space, punctuation and a tokenization that differs in context (x1.5 + 8), and at least the
 * question's own `max_tokens` when it sets one. A cap below the answer's length would score a right
 * answer wrong.
 */
export function generationBudget(answerTokens: number, questionMaxTokens?: number): number {
  const fromAnswer = Math.ceil(answerTokens * 1.5) + 8;
  return Math.max(fromAnswer, questionMaxTokens ?? 0);
}

export interface OpenAiInferenceOptions {
  /** Endpoint root, e.g. `http://127.0.0.1:8080` (a trailing `/v1` is accepted too). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer ...`. */
  apiKey?: string;
  label: string;
  /** Style for models whose `/v1/models` entry does not say whether they have a chat template. Default chat. */
  promptStyle?: PromptStyle;
  /** Per attempt, headers and body. Default 120 s. */
  timeoutMs?: number;
  /** Extra attempts after the first on 429, 5xx, timeouts and network errors. Default 5. */
  retries?: number;
  /** First backoff step; doubles per attempt, with jitter. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Cap of one backoff step and of a honoured `Retry-After`. Default 60 s. */
  maxRetryDelayMs?: number;
  /** Keep-alive connections to the endpoint. Default 16. */
  connections?: number;
  dispatcher?: Dispatcher;
}

/** OpenAI's `{data: [...]}`, or a bare array as Together's `/v1/models` answers. */
const ModelListSchema = z.preprocess((value) => (Array.isArray(value) ? { data: value } : value), z.object({
  data: z.array(
    z
      .object({
        id: z.string().min(1),
        parent: z.string().nullish(),
        chat_template: z.boolean().nullish(),
        meta: z.object({ n_params: z.number().nullish() }).passthrough().nullish(),
      })
      .passthrough(),
  ),
}));

const UsageSchema = z
  .object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) })
  .passthrough()
  .nullish();

const CompletionResponseSchema = z.object({
  choices: z.array(z.object({ text: z.string(), finish_reason: z.string().nullish() }).passthrough()).min(1),
  usage: UsageSchema,
});

const ChatResponseSchema = z.object({
  choices: z
    .array(
      z
        .object({
          message: z.object({ content: z.string().nullable() }).passthrough(),
          finish_reason: z.string().nullish(),
        })
        .passthrough(),
    )
    .min(1),
  usage: UsageSchema,
});

const TokenizeResponseSchema = z.object({ count: z.number().int().min(0) }).passthrough();

/** OpenAI's `{error: {message}}` (vLLM today), or the flat `{object: "error", message}` of SGLang and older vLLM. */
const ErrorBodySchema = z.union([
  z.object({ error: z.union([z.string(), z.object({ message: z.string() }).passthrough()]) }),
  z.object({ message: z.string() }).passthrough(),
]);

function normalizeRoot(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith('/v1') ? trimmed.slice(0, -3) : trimmed;
}

/**
 * An {@link InferenceEngine} over OpenAI-compatible HTTP. A model whose `/v1/models` entry says
 * `chat_template: false` is asked through `/v1/completions` with the prompt as is; one that says
 * true through `/v1/chat/completions` as one user message; others in `promptStyle`. Every call has
 * a timeout; 429, 5xx, timeouts and network errors are retried with exponential backoff, waiting at
 * least the `Retry-After` the endpoint asked for (up to `maxRetryDelayMs`); other 4xx and
 * responses that do not have the OpenAI shape fail at once with an error naming the route and field.
 * Token counts come from vLLM's `POST /tokenize`; an endpoint without it (404, 405, 501) is
 * remembered and counted by {@link estimateTokens}.
 */
export function createOpenAiInference(options: OpenAiInferenceOptions): InferenceEngine {
  const root = normalizeRoot(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const retries = Math.max(0, options.retries ?? 5);
  const baseDelay = options.retryBaseDelayMs ?? 500;
  const maxDelay = options.maxRetryDelayMs ?? 60_000;
  const defaultStyle = options.promptStyle ?? 'chat';
  const ownAgent = options.dispatcher ? null : new Agent({ connections: options.connections ?? 16, keepAliveTimeout: 10_000 });
  const dispatcher = options.dispatcher ?? ownAgent!;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const styles = new Map<string, PromptStyle>();
  let tokenizeMissing = false;
  let modelsLoaded: Promise<void> | null = null;

  function backoff(attempt: number, retryAfterMs: number | null): number {
    const exponential = Math.min(maxDelay, baseDelay * 2 ** attempt);
    const jittered = exponential / 2 + Math.random() * (exponential / 2);
    return retryAfterMs === null ? jittered : Math.min(maxDelay, Math.max(retryAfterMs, jittered));
  }

  async function attempt(method: 'GET' | 'POST', path: string, body: unknown, outer?: AbortSignal): Promise<{ status: number; json: unknown }> {
    const label = `${method} ${path}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = outer ? AbortSignal.any([timeout, outer]) : timeout;
    let status: number;
    let text: string;
    let retryAfterMs: number | null;
    try {
      const response = await request(root + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        dispatcher,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      status = response.statusCode;
      retryAfterMs = parseRetryAfter(response.headers['retry-after']);
      text = await response.body.text();
    } catch (error) {
      if (outer?.aborted) throw error;
      const code = (error as { code?: string }).code;
      if (timeout.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
        throw new InferenceError('timeout', `${label} on ${root} timed out after ${timeoutMs} ms`, null, null, { cause: error });
      }
      const detail = error instanceof Error ? (code ?? error.message) : String(error);
      throw new InferenceError('network', `${label} on ${root} failed: ${detail}`, null, null, { cause: error });
    }
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
      if (status >= 200 && status < 300) {
        throw new InferenceError('malformed', `${label} on ${root} returned a body that is not JSON: ${text.slice(0, 120)}`, status);
      }
    }
    if (status >= 200 && status < 300) return { status, json };
    const parsed = ErrorBodySchema.safeParse(json);
    const error = parsed.success && 'error' in parsed.data ? (parsed.data.error as string | { message: string }) : undefined;
    const detail = !parsed.success
      ? text.slice(0, 200) || `HTTP ${status}`
      : error !== undefined
        ? typeof error === 'string'
          ? error
          : error.message
        : (parsed.data as { message: string }).message;
    const message = `${label} on ${root} answered ${status}: ${detail}`;
    if (status === 429) throw new InferenceError('rate_limited', message, status, retryAfterMs);
    if (status >= 500) throw new InferenceError('server_error', message, status, retryAfterMs);
    throw new InferenceError('rejected', message, status);
  }

  async function call<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    schema: S,
    signal?: AbortSignal,
  ): Promise<z.output<S>> {
    for (let attemptIndex = 0; ; attemptIndex++) {
      let result: { status: number; json: unknown };
      try {
        result = await attempt(method, path, body, signal);
      } catch (error) {
        if (!(error instanceof InferenceError) || !error.retryable || attemptIndex >= retries) throw error;
        await sleep(backoff(attemptIndex, error.retryAfterMs), signal);
        if (signal?.aborted) throw error;
        continue;
      }
      const parsed = schema.safeParse(result.json);
      if (!parsed.success) {
        throw new InferenceError(
          'malformed',
          `${method} ${path} on ${root} returned a response without the OpenAI shape: ${describeZodError(parsed.error)}`,
          result.status,
        );
      }
      return parsed.data;
    }
  }

  async function listModels(): Promise<InferenceModel[]> {
    const list = await call('GET', '/v1/models', undefined, ModelListSchema);
    const models = list.data.map((m) => ({
      id: m.id,
      parent: m.parent ?? null,
      chatTemplate: m.chat_template ?? null,
      params: typeof m.meta?.n_params === 'number' && m.meta.n_params > 0 ? Math.round(m.meta.n_params) : null,
    }));
    for (const model of models) {
      const own = model.chatTemplate ?? models.find((m) => m.id === model.parent)?.chatTemplate ?? null;
      styles.set(model.id, own === null ? defaultStyle : own ? 'chat' : 'completion');
    }
    return models;
  }

  async function styleOf(model: string): Promise<PromptStyle> {
    if (!styles.has(model)) {
      // One lookup for every model asked about before the first answer; an unknown model keeps the default.
      modelsLoaded ??= listModels().then(
        () => undefined,
        (error: unknown) => {
          modelsLoaded = null;
          throw error;
        },
      );
      await modelsLoaded;
      if (!styles.has(model)) styles.set(model, defaultStyle);
    }
    return styles.get(model)!;
  }

  return {
    label: options.label,
    listModels,
    async complete(input) {
      const style = await styleOf(input.model);
      const common = {
        model: input.model,
        max_tokens: input.maxTokens,
        temperature: 0,
        seed: 0,
        ...(input.stop && input.stop.length > 0 ? { stop: input.stop } : {}),
        ...input.extraBody,
      };
      let text: string;
      let finishReason: string | null;
      let usage: { prompt_tokens: number; completion_tokens: number } | null | undefined;
      if (style === 'completion') {
        const response = await call('POST', '/v1/completions', { ...common, prompt: input.prompt }, CompletionResponseSchema, input.signal);
        text = response.choices[0]!.text;
        finishReason = response.choices[0]!.finish_reason ?? null;
        usage = response.usage;
      } else {
        const response = await call(
          'POST',
          '/v1/chat/completions',
          { ...common, messages: [{ role: 'user', content: input.prompt }] },
          ChatResponseSchema,
          input.signal,
        );
        text = response.choices[0]!.message.content ?? '';
        finishReason = response.choices[0]!.finish_reason ?? null;
        usage = response.usage;
      }
      return {
        text,
        finishReason,
        promptTokens: usage?.prompt_tokens ?? estimateTokens(input.prompt),
        completionTokens: usage?.completion_tokens ?? estimateTokens(text),
        usageReported: usage !== null && usage !== undefined,
        style,
      };
    },
    async countTokens(model, text, signal) {
      if (!tokenizeMissing) {
        try {
          const response = await call('POST', '/tokenize', { model, prompt: text, add_special_tokens: false }, TokenizeResponseSchema, signal);
          return { count: response.count, exact: true };
        } catch (error) {
          if (!(error instanceof InferenceError) || error.code !== 'rejected' || ![404, 405, 501].includes(error.status ?? 0)) {
            throw error;
          }
          tokenizeMissing = true;
        }
      }
      return { count: estimateTokens(text), exact: false };
    },
    async close() {
      await ownAgent?.close();
    },
  };
}
