// Platform client over the REST API: token auth, timeouts, retries per call kind, zod-validated responses.
import { request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  API_PREFIX,
  AccountSchema,
  BenchmarkListSchema,
  BenchmarkSchema,
  DatasetSchema,
  ErrorBodySchema,
  ModelListSchema,
  ModelSchema,
  RunResultsPageSchema,
  RunSchema,
  TrainingEstimateSchema,
  TrainingJobSchema,
  WebhookEndpointSchema,
  describeZodError,
  type BenchmarkUploadRequestWire,
  type BuildDatasetRequestWire,
  type LaunchRunRequestWire,
  type TrainingRequestWire,
  type WebhookEndpointRequestWire,
} from './contract.js';
import { PlatformError, codeForStatus, isApiErrorCode } from './errors.js';
import type { Platform } from './platform.js';

export interface HttpPlatformOptions {
  /** Platform root, e.g. `https://benchgen.example.com` (a trailing `/api/v1` is accepted too). */
  baseUrl: string;
  token: string;
  /** Per attempt, covering headers and body. Default 15 s. */
  timeoutMs?: number;
  /** Extra attempts after the first for retryable failures. Default 3. */
  retries?: number;
  dispatcher?: Dispatcher;
  /** First backoff step; doubles per attempt, with jitter. Default 250 ms. */
  retryBaseDelayMs?: number;
  /** Cap of one backoff step. Default 8 s. */
  maxRetryDelayMs?: number;
  /** A `Retry-After` longer than this is not waited for: the call fails with the server's error. Default 60 s. */
  maxRetryAfterMs?: number;
  userAgent?: string;
}

type Method = 'GET' | 'POST' | 'PUT';

interface CallSpec {
  method: Method;
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Sent as `Idempotency-Key`; retries reuse it, so the server applies the call at most once. */
  idempotencyKey?: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Parses `Retry-After` (delta-seconds or HTTP-date) into milliseconds. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return null;
  if (/^\d+(\.\d+)?$/.test(raw.trim())) return Math.round(Number(raw.trim()) * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function normalizeBaseUrl(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith(API_PREFIX) ? trimmed.slice(0, -API_PREFIX.length) : trimmed;
}

/**
 * Creates the HTTP implementation of `Platform`. Every call (reads, the estimate, launches, which
 * always carry their caller's idempotency key, and cancels, which are idempotent by design) is
 * retried on 429, 5xx, timeouts and network errors with exponential backoff and jitter, waiting at
 * least `Retry-After`. Other 4xx fail at once. A response that does not match the contract fails
 * with `invalid_response` naming the field.
 */
export function createHttpPlatform(options: HttpPlatformOptions): Platform {
  const root = normalizeBaseUrl(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 15_000;
  const retries = Math.max(0, options.retries ?? 3);
  const baseDelay = options.retryBaseDelayMs ?? 250;
  const maxDelay = options.maxRetryDelayMs ?? 8_000;
  const maxRetryAfter = options.maxRetryAfterMs ?? 60_000;
  const authorization = `Token ${options.token}`;
  const userAgent = options.userAgent ?? 'verdict-bot-platform-client/1';

  function backoff(attempt: number, retryAfterMs: number | null): number {
    const exponential = Math.min(maxDelay, baseDelay * 2 ** attempt);
    const jittered = exponential / 2 + Math.random() * (exponential / 2);
    return retryAfterMs === null ? jittered : Math.max(retryAfterMs, jittered);
  }

  async function attempt(spec: CallSpec, label: string): Promise<{ status: number; json: unknown }> {
    const url = new URL(root + API_PREFIX + spec.path);
    for (const [key, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = {
      authorization,
      accept: 'application/json',
      'user-agent': userAgent,
    };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;

    const signal = AbortSignal.timeout(timeoutMs);
    let status: number;
    let text: string;
    let retryAfterMs: number | null;
    try {
      const response = await request(url, {
        method: spec.method,
        headers,
        body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
        signal,
        ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      });
      status = response.statusCode;
      retryAfterMs = parseRetryAfter(response.headers['retry-after']);
      text = await response.body.text();
    } catch (error) {
      if (signal.aborted) {
        throw new PlatformError('timeout', `${label} timed out after ${timeoutMs} ms`, { cause: error });
      }
      const detail = error instanceof Error ? ((error as { code?: string }).code ?? error.message) : String(error);
      throw new PlatformError('network', `${label} failed: ${detail}`, { cause: error });
    }

    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      if (status >= 200 && status < 300) {
        throw new PlatformError('invalid_response', `${label} returned a body that is not JSON`, { status });
      }
      json = undefined;
    }

    if (status >= 200 && status < 300) return { status, json };

    const parsed = ErrorBodySchema.safeParse(json);
    const statusCode = codeForStatus(status);
    const code = parsed.success && isApiErrorCode(parsed.data.error.code) ? parsed.data.error.code : statusCode;
    const message = parsed.success ? parsed.data.error.message : `HTTP ${status}`;
    throw new PlatformError(code, `${label}: ${message}`, { status, retryAfterMs });
  }

  async function call<S extends z.ZodType>(spec: CallSpec, schema: S): Promise<z.output<S>> {
    const label = `${spec.method} ${API_PREFIX}${spec.path}`;
    for (let attemptIndex = 0; ; attemptIndex++) {
      let result: { status: number; json: unknown };
      try {
        result = await attempt(spec, label);
      } catch (error) {
        if (!(error instanceof PlatformError) || !error.retryable || attemptIndex >= retries) throw error;
        if (error.retryAfterMs !== null && error.retryAfterMs > maxRetryAfter) throw error;
        await sleep(backoff(attemptIndex, error.retryAfterMs));
        continue;
      }
      const parsed = schema.safeParse(result.json);
      if (!parsed.success) {
        throw new PlatformError(
          'invalid_response',
          `${label} returned a response that does not match the contract: ${describeZodError(parsed.error)}`,
          { status: result.status },
        );
      }
      return parsed.data;
    }
  }

  const segment = encodeURIComponent;

  return {
    async findModels(query) {
      const list = await call({ method: 'GET', path: '/models', query: { search: query } }, ModelListSchema);
      return list.items;
    },
    getModel: (id) => call({ method: 'GET', path: `/models/${segment(id)}` }, ModelSchema),
    async listBenchmarks() {
      const list = await call({ method: 'GET', path: '/benchmarks' }, BenchmarkListSchema);
      return list.items;
    },
    getBenchmark: (id) => call({ method: 'GET', path: `/benchmarks/${segment(id)}` }, BenchmarkSchema),
    uploadBenchmark(input) {
      const body: BenchmarkUploadRequestWire = { id: input.id, file_name: input.fileName, content: input.content };
      return call({ method: 'POST', path: '/benchmarks', body }, BenchmarkSchema);
    },
    launchRun(input, idempotencyKey) {
      const body: LaunchRunRequestWire = { benchmark_id: input.benchmarkId, model_id: input.modelId };
      return call({ method: 'POST', path: '/runs', body, idempotencyKey }, RunSchema);
    },
    getRun: (id) => call({ method: 'GET', path: `/runs/${segment(id)}` }, RunSchema),
    // A cancel is a write, retried like a read: cancelling twice answers the cancelled run again.
    cancelRun: (id) => call({ method: 'POST', path: `/runs/${segment(id)}/cancel` }, RunSchema),
    listRunResults(runId, page = {}) {
      return call(
        { method: 'GET', path: `/runs/${segment(runId)}/results`, query: { cursor: page.cursor, limit: page.limit } },
        RunResultsPageSchema,
      );
    },
    buildDataset(input, idempotencyKey) {
      const body: BuildDatasetRequestWire = {
        run_id: input.runId,
        augmentation: input.augmentation,
        held_out_fraction: input.heldOutFraction,
        seed: input.seed,
      };
      return call({ method: 'POST', path: '/datasets', body, idempotencyKey }, DatasetSchema);
    },
    getDataset: (id) => call({ method: 'GET', path: `/datasets/${segment(id)}` }, DatasetSchema),
    estimateTraining(input) {
      const body: TrainingRequestWire = {
        dataset_id: input.datasetId,
        base_model_id: input.baseModelId,
        epochs: input.epochs,
      };
      return call({ method: 'POST', path: '/trainings/estimate', body }, TrainingEstimateSchema);
    },
    launchTraining(input, idempotencyKey) {
      const body: TrainingRequestWire = {
        dataset_id: input.datasetId,
        base_model_id: input.baseModelId,
        epochs: input.epochs,
      };
      return call({ method: 'POST', path: '/trainings', body, idempotencyKey }, TrainingJobSchema);
    },
    getTraining: (id) => call({ method: 'GET', path: `/trainings/${segment(id)}` }, TrainingJobSchema),
    cancelTraining: (id) => call({ method: 'POST', path: `/trainings/${segment(id)}/cancel` }, TrainingJobSchema),
    getBalance: () => call({ method: 'GET', path: '/account' }, AccountSchema),
    async registerWebhook(url) {
      const body: WebhookEndpointRequestWire = { url };
      await call({ method: 'PUT', path: '/webhook-endpoint', body }, WebhookEndpointSchema);
    },
  };
}
