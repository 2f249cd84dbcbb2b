// The HTTP client against a scripted fake server: validation, retries, Retry-After, timeouts, token hygiene.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { PlatformError } from '@verdict/contract/errors';
import { createHttpPlatform, parseRetryAfter } from '@verdict/contract/http-client';
import type { RunWire } from '@verdict/contract/contract';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

type Script = (seen: Seen, index: number) => { status: number; body?: unknown; raw?: string; headers?: Record<string, string> } | 'hang';

const TOKEN = 'sbx_super-secret-token-value';
const servers: http.Server[] = [];

async function fakeServer(script: Script) {
  const seen: Seen[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const entry = { method: request.method!, url: request.url!, headers: request.headers, body: Buffer.concat(chunks).toString(), at: Date.now() };
      seen.push(entry);
      const reply = script(entry, seen.length - 1);
      if (reply === 'hang') return;
      response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      response.end(reply.raw ?? (reply.body === undefined ? '' : JSON.stringify(reply.body)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, client: (options: { retries?: number; timeoutMs?: number; maxRetryAfterMs?: number } = {}) =>
    createHttpPlatform({ baseUrl: url, token: TOKEN, retryBaseDelayMs: 10, ...options }) };
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function runWire(overrides: Partial<RunWire> = {}): RunWire {
  return {
    id: 'run_1',
    benchmark_id: '104',
    model_id: 'qwen/Qwen2.5-0.5B-Instruct',
    status: 'running',
    question_count: 100,
    score: null,
    category_scores: null,
    price_credits: 4,
    charged_credits: null,
    created_at: '2025-01-01T00:00:00.000Z',
    started_at: '2025-01-01T00:00:01.000Z',
    finished_at: null,
    estimated_finish_at: '2025-01-01T00:01:01.000Z',
    error_message: null,
    web_url: 'http://platform.test/runs/run_1',
    environment: 'production',
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(PlatformError);
  const platformError = error as PlatformError;
  expect(platformError.message).not.toContain(TOKEN);
  expect(JSON.stringify(platformError)).not.toContain(TOKEN);
  return platformError;
}

describe('http client', () => {
  it('sends the token, maps snake_case to camelCase and encodes ids', async () => {
    const fake = await fakeServer(() => ({ status: 200, body: runWire() }));
    const run = await fake.client().getRun('run/1');
    expect(run).toMatchObject({ id: 'run_1', benchmarkId: '104', priceCredits: 4, chargedCredits: null, environment: 'production' });
    expect(fake.seen[0]).toMatchObject({ method: 'GET', url: '/api/v1/runs/run%2F1' });
    expect(fake.seen[0]!.headers.authorization).toBe(`Token ${TOKEN}`);
  });

  it('accepts a base URL that already ends in /api/v1', async () => {
    const fake = await fakeServer(() => ({ status: 200, body: runWire() }));
    await createHttpPlatform({ baseUrl: `${fake.url}/api/v1/`, token: TOKEN }).getRun('run_1');
    expect(fake.seen[0]!.url).toBe('/api/v1/runs/run_1');
  });

  it('turns a malformed body into invalid_response naming the field', async () => {
    const fake = await fakeServer(() => ({ status: 200, body: runWire({ score: 'high' as unknown as number }) }));
    const error = await failure(fake.client().getRun('run_1'));
    expect(error.code).toBe('invalid_response');
    expect(error.message).toMatch(/score/);
    expect(fake.seen).toHaveLength(1);
  });

  it('names nested paths and cross-field rules', async () => {
    const page = {
      items: [
        { question_id: 'q1', category: 'a', question: 'q', expected_answer: '1', model_answer: '1', correct: true, score: 1 },
        { question_id: 'q2', category: 'a', question: 'q', expected_answer: '1', model_answer: '2', correct: 'no', score: 0 },
      ],
      next_cursor: null,
    };
    const fake = await fakeServer((seen) =>
      seen.url.includes('results') ? { status: 200, body: page } : { status: 200, body: runWire({ status: 'completed' }) },
    );
    const nested = await failure(fake.client().listRunResults('run_1'));
    expect(nested.code).toBe('invalid_response');
    expect(nested.message).toContain('items[1].correct');
    const completed = await failure(fake.client().getRun('run_1'));
    expect(completed.message).toMatch(/score: required when status is completed/);
  });

  it('retries a cancel (idempotent) on 503 and a lost answer, accepts the cancelled status, and fails at once on 409 already_finished', async () => {
    const cancelled = runWire({ status: 'cancelled', charged_credits: 1.24, finished_at: '2025-01-01T12:00:30.000Z' });
    const fake = await fakeServer((_seen, i) => {
      if (i === 0) return { status: 503, body: { error: { code: 'unavailable', message: 'try again' } } };
      if (i === 1) return 'hang';
      if (i === 2) return { status: 200, body: cancelled };
      if (i === 3) return { status: 200, body: { ...cancelled, charged_credits: null } };
      return { status: 409, body: { error: { code: 'already_finished', message: 'run run_2 already completed; there is nothing to cancel' } } };
    });
    const client = fake.client({ timeoutMs: 300 });
    const run = await client.cancelRun('run_1');
    expect(run).toMatchObject({ status: 'cancelled', chargedCredits: 1.24, finishedAt: '2025-01-01T12:00:30.000Z' });
    expect(fake.seen.map((s) => `${s.method} ${s.url}`)).toEqual(Array(3).fill('POST /api/v1/runs/run_1/cancel'));
    const invalid = await failure(client.cancelRun('run_1'));
    expect(invalid.message).toMatch(/charged_credits: required when status is cancelled/);
    const finished = await failure(client.cancelTraining('tj_2'));
    expect(finished).toMatchObject({ code: 'already_finished', status: 409, retryable: false });
    expect(fake.seen.at(-1)!.url).toBe('/api/v1/trainings/tj_2/cancel');
    expect(fake.seen).toHaveLength(5);
  });

  it('rejects credits with more than two decimals and a body that is not JSON', async () => {
    const fake = await fakeServer((_seen, i) =>
      i === 0
        ? { status: 200, body: { name: 'acme', balance_credits: 10.123, reserved_credits: 0, available_credits: 10.12, environment: 'production' } }
        : { status: 200, raw: '<html>oops</html>' },
    );
    const credits = await failure(fake.client().getBalance());
    expect(credits.message).toMatch(/balance_credits/);
    const html = await failure(fake.client().getBalance());
    expect(html.code).toBe('invalid_response');
  });

  it('honours Retry-After on 429 before retrying a read', async () => {
    const fake = await fakeServer((_seen, i) =>
      i === 0
        ? { status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, headers: { 'retry-after': '1' } }
        : { status: 200, body: runWire() },
    );
    const started = Date.now();
    await fake.client().getRun('run_1');
    expect(fake.seen).toHaveLength(2);
    expect(fake.seen[1]!.at - fake.seen[0]!.at).toBeGreaterThanOrEqual(990);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('fails at once when Retry-After is longer than it is willing to wait', async () => {
    const fake = await fakeServer(() => ({
      status: 429,
      body: { error: { code: 'rate_limited', message: 'come back tomorrow' } },
      headers: { 'retry-after': '86400' },
    }));
    const error = await failure(fake.client({ maxRetryAfterMs: 5_000 }).getRun('run_1'));
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, retryAfterMs: 86_400_000 });
    expect(fake.seen).toHaveLength(1);
  });

  it('retries 5xx on reads and gives up after the configured retries', async () => {
    const fake = await fakeServer(() => ({ status: 503, body: { error: { code: 'unavailable', message: 'maintenance' } } }));
    const error = await failure(fake.client({ retries: 2 }).listBenchmarks());
    expect(error).toMatchObject({ code: 'unavailable', status: 503 });
    expect(error.message).toMatch(/maintenance/);
    expect(fake.seen).toHaveLength(3);
  });

  it('retries a launch only with the same idempotency key', async () => {
    const fake = await fakeServer((_seen, i) =>
      i < 2 ? { status: i === 0 ? 502 : 429, body: { error: { code: 'unavailable', message: 'x' } } } : { status: 201, body: runWire({ status: 'queued', started_at: null }) },
    );
    const run = await fake.client({ retries: 3 }).launchRun({ benchmarkId: '104', modelId: 'm' }, 'key-123');
    expect(run.status).toBe('queued');
    expect(fake.seen).toHaveLength(3);
    expect(fake.seen.map((s) => s.headers['idempotency-key'])).toEqual(['key-123', 'key-123', 'key-123']);
    expect(fake.seen.every((s) => JSON.parse(s.body).benchmark_id === '104')).toBe(true);
  });

  it('does not retry other 4xx and maps codes from the body or the status', async () => {
    const fake = await fakeServer((_seen, i) =>
      i === 0
        ? { status: 422, body: { error: { code: 'invalid_request', message: 'augmentation: too big' } } }
        : i === 1
          ? { status: 402, raw: 'payment required' }
          : { status: 404, body: { error: { code: 'gone_fishing', message: 'no such run' } } },
    );
    const client = fake.client();
    expect(await failure(client.buildDataset({ runId: 'run_1', augmentation: 50 }, 'k'))).toMatchObject({ code: 'invalid_request', status: 422 });
    expect(await failure(client.getBalance())).toMatchObject({ code: 'insufficient_credits', status: 402 });
    expect(await failure(client.getRun('x'))).toMatchObject({ code: 'not_found', status: 404 });
    expect(fake.seen).toHaveLength(3);
  });

  it('times out a call that gets no answer', async () => {
    const fake = await fakeServer(() => 'hang');
    const started = Date.now();
    const error = await failure(fake.client({ timeoutMs: 150, retries: 1 }).getBalance());
    expect(error).toMatchObject({ code: 'timeout', status: null });
    expect(fake.seen).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('reports network errors after retrying', async () => {
    const port = await freePort();
    const client = createHttpPlatform({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, retries: 1, retryBaseDelayMs: 5 });
    const error = await failure(client.getBalance());
    expect(error.code).toBe('network');
    expect(error.retryable).toBe(true);
  });

  it('parses Retry-After in seconds and as an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(undefined)).toBeNull();
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('soon')).toBeNull();
  });
});
