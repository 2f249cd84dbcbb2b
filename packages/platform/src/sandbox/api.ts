// The sandbox's HTTP surface: routes of /api/v1, token auth, fault injection, JSON errors, and the web pages.
// One route table: each handler is a few lines that parse, call the sandbox's operations (runs, datasets, trainings, models) and answer.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import {
  API_PREFIX,
  BuildDatasetRequestSchema,
  LaunchRunRequestSchema,
  RESULTS_PAGE,
  TrainingRequestSchema,
  WebhookEndpointRequestSchema,
  describeZodError,
  type ErrorBodyWire,
  type RunResultsPageWire,
  type WebhookEndpointWire,
} from '@verdict/contract/contract';
import { sleep } from '../sleep.js';
import { answerToWire, listAnswers } from './answers.js';
import { MAX_BENCHMARK_UPLOAD_BYTES, getBenchmark, isJsonlBody, listBenchmarks, uploadBenchmark } from './benchmark-routes.js';
import type { SandboxContext } from './context.js';
import { buildDataset } from './datasets.js';
import { modelById, searchModels, syncEngineModels } from './models.js';
import { SandboxApiError, requireBenchmark, type Reply } from './replies.js';
import { cancelRun, launchRun, requireRun } from './runs.js';
import { cancelTraining, estimateTraining, launchTraining } from './trainings.js';
import { notFoundPage, runPage, trainingPage } from './pages.js';
import { questionResult } from './simulator.js';
import { datasetToWire, getDataset } from './store/datasets.js';
import { listModels, loadLineage, modelToWire } from './store/models.js';
import { runToWire } from './store/runs.js';
import { getSetting, readAccount, setSetting } from './store/settings.js';
import { getTraining, trainingToWire } from './store/trainings.js';
import { WEBHOOK_URL_SETTING, WEBHOOK_URL_UPDATED_SETTING } from './webhook-sender.js';

const MAX_BODY_BYTES = 1_000_000;

interface ApiRequest {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: unknown;
  /** The body as received (a JSONL benchmark upload is not JSON). */
  raw: string;
}

type RouteHandler = (request: ApiRequest, params: string[]) => Promise<Reply>;

interface Route {
  method: string;
  pattern: RegExp;
  handle: RouteHandler;
}

const badRequest = (message: string) => new SandboxApiError(400, 'invalid_request', message);

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw new SandboxApiError(422, 'invalid_request', `invalid body: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

function idempotencyKey(request: ApiRequest, required: boolean): string | undefined {
  const raw = request.headers['idempotency-key'];
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key === undefined || key === '') {
    if (required) throw badRequest('the Idempotency-Key header is required on this endpoint');
    return undefined;
  }
  if (key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw badRequest('Idempotency-Key must be 1-255 visible ASCII characters');
  }
  return key;
}

interface Cursor {
  r: string;
  o: number;
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeCursor(raw: string, runId: string, questionCount: number): number {
  try {
    const cursor = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<Cursor>;
    if (cursor.r === runId && Number.isInteger(cursor.o) && cursor.o! >= 0 && cursor.o! <= questionCount) {
      return cursor.o!;
    }
  } catch {
    // falls through to the error below
  }
  throw badRequest('cursor is not valid for this run; pass back next_cursor exactly as received');
}

function parseLimit(raw: string | null): number {
  if (raw === null) return RESULTS_PAGE.defaultLimit;
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > RESULTS_PAGE.maxLimit) {
    throw badRequest(`limit must be an integer from 1 to ${RESULTS_PAGE.maxLimit}`);
  }
  return limit;
}

function routes(ctx: SandboxContext): Route[] {
  const json = (body: unknown, status = 200): Reply => ({ status, body });
  const route = (method: string, path: string, handle: RouteHandler): Route => ({
    method,
    pattern: new RegExp(`^${API_PREFIX.replace(/\//g, '\\/')}${path}$`),
    handle,
  });

  return [
    route('GET', '/account', async () => json(await readAccount(ctx.pool))),

    route('GET', '/models', async (request) => {
      const query = request.url.searchParams.get('search') ?? '';
      let models = await listModels(ctx.pool);
      if (ctx.inference) {
        // A real engine: what the endpoint serves now, plus the models this platform trained.
        const served = new Set((await syncEngineModels(ctx, ctx.inference)).map((m) => m.id));
        models = (await listModels(ctx.pool)).filter(
          (m) => m.engine !== null && (m.kind === 'fine_tuned' || served.has(m.id)),
        );
      }
      const found = searchModels(models, query);
      return json({ items: found.map(modelToWire) });
    }),
    route('GET', '/models/(.+)', async (_request, [id]) => {
      if (ctx.inference && !(await modelById(ctx, id!))) await syncEngineModels(ctx, ctx.inference);
      const model = await modelById(ctx, id!);
      if (!model) throw new SandboxApiError(404, 'not_found', `model ${id} not found; search with GET ${API_PREFIX}/models?search=`);
      return json(modelToWire(model));
    }),

    route('GET', '/benchmarks', async () => listBenchmarks(ctx)),
    route('GET', '/benchmarks/([^/]+)', async (_request, [id]) => getBenchmark(ctx, id!)),
    route('POST', '/benchmarks', async (request) => uploadBenchmark(ctx, request)),

    route('POST', '/runs', async (request) => {
      const key = idempotencyKey(request, true)!;
      return launchRun(ctx, parseBody(LaunchRunRequestSchema, request.body), key);
    }),
    route('GET', '/runs/([^/]+)', async (_request, [id]) => json(runToWire(await requireRun(ctx, id!), ctx.publicUrl))),
    route('POST', '/runs/([^/]+)/cancel', async (_request, [id]) => cancelRun(ctx, id!)),
    route('GET', '/runs/([^/]+)/results', async (request, [id]) => {
      const run = await requireRun(ctx, id!);
      const limit = parseLimit(request.url.searchParams.get('limit'));
      if (run.status !== 'completed') {
        throw new SandboxApiError(422, 'invalid_request', `run ${run.id} is ${run.status}; results exist once it has completed`);
      }
      const cursor = request.url.searchParams.get('cursor');
      const offset = cursor === null || cursor === '' ? 0 : decodeCursor(cursor, run.id, run.question_count);
      if (run.engine !== null) {
        const rows = await listAnswers(ctx.pool, run.id, offset, limit);
        const end = offset + rows.length;
        const stored: RunResultsPageWire = {
          items: rows.map(answerToWire),
          next_cursor: end < run.question_count ? encodeCursor({ r: run.id, o: end }) : null,
        };
        return json(stored);
      }
      const benchmark = requireBenchmark(run.benchmark_id);
      const lineage = await loadLineage(ctx.pool, run.model_id, ctx.lineages);
      const end = Math.min(run.question_count, offset + limit);
      const items = [];
      for (let index = offset; index < end; index++) {
        items.push(questionResult(run.seed, benchmark, index, lineage, { runId: run.id, rerunFlipRate: run.flip_rate }));
      }
      const page: RunResultsPageWire = {
        items,
        next_cursor: end < run.question_count ? encodeCursor({ r: run.id, o: end }) : null,
      };
      return json(page);
    }),

    route('POST', '/datasets', async (request) =>
      buildDataset(ctx, parseBody(BuildDatasetRequestSchema, request.body), idempotencyKey(request, false)),
    ),
    route('GET', '/datasets/([^/]+)', async (_request, [id]) => {
      const dataset = await getDataset(ctx.pool, id!);
      if (!dataset) throw new SandboxApiError(404, 'not_found', `dataset ${id} not found`);
      return json(datasetToWire(dataset));
    }),

    route('POST', '/trainings/estimate', async (request) =>
      estimateTraining(ctx, parseBody(TrainingRequestSchema, request.body)),
    ),
    route('POST', '/trainings', async (request) => {
      const key = idempotencyKey(request, true)!;
      return launchTraining(ctx, parseBody(TrainingRequestSchema, request.body), key);
    }),
    route('GET', '/trainings/([^/]+)', async (_request, [id]) => {
      const training = await getTraining(ctx.pool, id!);
      if (!training) throw new SandboxApiError(404, 'not_found', `training ${id} not found`);
      return json(trainingToWire(training, ctx.publicUrl, ctx.now()));
    }),
    route('POST', '/trainings/([^/]+)/cancel', async (_request, [id]) => cancelTraining(ctx, id!)),

    route('GET', '/webhook-endpoint', async () => json(await readWebhookEndpoint(ctx))),
    route('PUT', '/webhook-endpoint', async (request) => {
      const { url } = parseBody(WebhookEndpointRequestSchema, request.body);
      await setWebhookUrl(ctx, url);
      return json(await readWebhookEndpoint(ctx));
    }),
  ];
}

export async function readWebhookEndpoint(ctx: SandboxContext): Promise<WebhookEndpointWire> {
  return {
    url: await getSetting(ctx.pool, WEBHOOK_URL_SETTING),
    updated_at: await getSetting(ctx.pool, WEBHOOK_URL_UPDATED_SETTING),
  };
}

export async function setWebhookUrl(ctx: SandboxContext, url: string): Promise<void> {
  await setSetting(ctx.pool, WEBHOOK_URL_SETTING, url);
  await setSetting(ctx.pool, WEBHOOK_URL_UPDATED_SETTING, ctx.now().toISOString());
  ctx.logger.info({ url }, 'sandbox webhook endpoint set');
}

function errorReply(error: SandboxApiError): Reply {
  const body: ErrorBodyWire = { error: { code: error.code, message: error.message } };
  return { status: error.status, body, headers: error.headers };
}

async function readBody(request: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new SandboxApiError(413, 'invalid_request', `request body is larger than ${maxBytes / 1_000_000} MB`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`malformed path segment ${segment}`);
  }
}

function authorized(header: string | undefined, token: string): boolean {
  const expected = Buffer.from(`Token ${token}`);
  const given = Buffer.from(header ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface ApiServerHandler {
  handle(request: IncomingMessage, response: ServerResponse): void;
  /** Resolves when every request being handled has finished. */
  settle(): Promise<void>;
}

/**
 * The request listener of the sandbox server. Injected faults (slowness, then 503/429) apply to
 * /api/ requests before anything else, so a request answered with an injected error was not applied.
 */
export function createApiHandler(ctx: SandboxContext, token: string, stopping: AbortSignal): ApiServerHandler {
  const table = routes(ctx);
  const inFlight = new Set<Promise<void>>();

  function send(response: ServerResponse, reply: Reply): void {
    if (response.headersSent || response.destroyed) return;
    const text = JSON.stringify(reply.body);
    response.writeHead(reply.status, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-platform-environment': 'sandbox',
      ...reply.headers,
    });
    response.end(text);
  }

  function sendHtml(response: ServerResponse, status: number, html: string): void {
    response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'x-platform-environment': 'sandbox' });
    response.end(html);
  }

  async function handlePage(url: URL, response: ServerResponse): Promise<boolean> {
    const run = /^\/runs\/([^/]+)$/.exec(url.pathname);
    if (run) {
      const row = await requireRun(ctx, decodeSegment(run[1]!)).catch(() => null);
      if (row) sendHtml(response, 200, runPage(runToWire(row, ctx.publicUrl)));
      else sendHtml(response, 404, notFoundPage(`run ${run[1]}`));
      return true;
    }
    const training = /^\/trainings\/([^/]+)$/.exec(url.pathname);
    if (training) {
      const row = await getTraining(ctx.pool, decodeSegment(training[1]!));
      if (row) sendHtml(response, 200, trainingPage(trainingToWire(row, ctx.publicUrl, ctx.now())));
      else sendHtml(response, 404, notFoundPage(`training ${training[1]}`));
      return true;
    }
    if (url.pathname === '/healthz') {
      send(response, { status: 200, body: { ok: true, environment: 'sandbox' } });
      return true;
    }
    if (url.pathname === '/') {
      sendHtml(response, 200, '<!doctype html><title>BenchGen sandbox</title><p>BenchGen sandbox platform. API under /api/v1.</p>');
      return true;
    }
    return false;
  }

  async function handleApi(request: IncomingMessage, url: URL): Promise<Reply> {
    const faults = ctx.faults;
    if (faults.apiSlowRate > 0 && ctx.random() < faults.apiSlowRate) await sleep(faults.apiSlowMs, stopping);
    if (stopping.aborted) throw new SandboxApiError(503, 'unavailable', 'the sandbox is shutting down');
    const targeted = faults.apiErrorOnly === null || `${request.method} ${url.pathname}`.startsWith(faults.apiErrorOnly);
    if (faults.apiErrorRate > 0 && targeted && ctx.random() < faults.apiErrorRate) {
      const retryAfter = { 'retry-after': String(faults.retryAfterSeconds) };
      if (ctx.random() < 0.5) throw new SandboxApiError(429, 'rate_limited', 'too many requests (sandbox-injected)', retryAfter);
      throw new SandboxApiError(503, 'unavailable', 'platform temporarily unavailable (sandbox-injected)', retryAfter);
    }
    if (!authorized(request.headers.authorization, token)) {
      throw new SandboxApiError(401, 'unauthorized', 'missing or invalid Authorization header; expected "Token <token>"', {
        'www-authenticate': 'Token',
      });
    }
    const upload = request.method === 'POST' && url.pathname === `${API_PREFIX}/benchmarks`;
    const raw = request.method === 'POST' || request.method === 'PUT' ? await readBody(request, upload ? MAX_BENCHMARK_UPLOAD_BYTES : MAX_BODY_BYTES) : '';
    let body: unknown;
    if (raw.trim() !== '' && !(upload && isJsonlBody(request.headers))) {
      try {
        body = JSON.parse(raw);
      } catch {
        throw badRequest('request body is not valid JSON');
      }
    }
    const matching = table.filter((r) => r.pattern.test(url.pathname));
    const match = matching.find((r) => r.method === request.method);
    if (!match) {
      if (matching.length > 0) throw new SandboxApiError(405, 'invalid_request', `${request.method} is not allowed on ${url.pathname}`);
      throw new SandboxApiError(404, 'not_found', `no endpoint ${request.method} ${url.pathname}`);
    }
    const params = match.pattern.exec(url.pathname)!.slice(1).map(decodeSegment);
    return match.handle({ method: request.method ?? 'GET', url, headers: request.headers, body, raw }, params);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://sandbox.invalid');
    try {
      if (!url.pathname.startsWith('/api/')) {
        if (request.method === 'GET' && (await handlePage(url, response))) return;
        send(response, errorReply(new SandboxApiError(404, 'not_found', `no page ${url.pathname}`)));
        return;
      }
      send(response, await handleApi(request, url));
    } catch (error) {
      if (error instanceof SandboxApiError) {
        send(response, errorReply(error));
        return;
      }
      ctx.logger.error({ err: error, path: url.pathname }, 'sandbox request failed');
      send(response, { status: 500, body: { error: { code: 'unavailable', message: 'internal sandbox error' } } });
    }
  }

  return {
    handle(request, response) {
      const work = handle(request, response).finally(() => inFlight.delete(work));
      inFlight.add(work);
    },
    async settle() {
      await Promise.allSettled([...inFlight]);
    },
  };
}
