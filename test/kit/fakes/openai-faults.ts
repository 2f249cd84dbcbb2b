// A fake OpenAI-compatible inference server speaking the real wire shapes, with scripted faults and request counting.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the server does with one request, instead of answering normally. */
export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  | { kind: 'hang'; ms: number }
  | { kind: 'raw'; body: string; status?: number }
  | { kind: 'json'; body: unknown; status?: number }
  /** Sends these bytes as the body (200, JSON content type): invalid UTF-8 a JS string cannot carry. */
  | { kind: 'bytes'; body: Buffer };

export interface FakeModel {
  id: string;
  chat_template?: boolean;
  parent?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
  authorization: string | undefined;
  at: number;
}

export interface FakeOpenAiServer {
  url: string;
  requests: RecordedRequest[];
  models: FakeModel[];
  /** Faults applied, in order, to the next requests whose path starts with the given prefix ('' = any). */
  faults: Array<{ path: string; fault: Fault }>;
  /** Answer of a completion; default echoes "answer to <prompt>". */
  answer: (prompt: string, maxTokens: number, model: string) => string;
  /** Wait before each generation answer (ms). */
  latencyMs: number;
  /** Most generation requests in flight at once so far. */
  maxInFlight: number;
  /** Set false to answer /tokenize with 404, like an endpoint without it. */
  tokenize: boolean;
  /** Generation requests (completions and chat) whose prompt equals `prompt`. */
  countFor(prompt: string): number;
  generationRequests(): RecordedRequest[];
  close(): Promise<void>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

export async function startFakeOpenAi(options: { models?: FakeModel[]; latencyMs?: number } = {}): Promise<FakeOpenAiServer> {
  let inFlight = 0;
  const timers = new Set<NodeJS.Timeout>();
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const fake: FakeOpenAiServer = {
    url: '',
    requests: [],
    models: options.models ?? [{ id: 'tiny-base', chat_template: false }],
    faults: [],
    answer: (prompt) => `answer to ${prompt}`,
    latencyMs: options.latencyMs ?? 0,
    maxInFlight: 0,
    tokenize: true,
    countFor(prompt) {
      return fake.generationRequests().filter((r) => promptOf(r.body) === prompt).length;
    },
    generationRequests() {
      return fake.requests.filter((r) => r.path === '/v1/completions' || r.path === '/v1/chat/completions');
    },
    close: async () => undefined,
  };

  function promptOf(body: Record<string, unknown> | undefined): string | undefined {
    if (!body) return undefined;
    if (typeof body.prompt === 'string') return body.prompt;
    const messages = body.messages as Array<{ content: string }> | undefined;
    return messages?.[messages.length - 1]?.content;
  }

  function send(response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    if (response.destroyed) return;
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(typeof body === 'string' ? body : JSON.stringify(body));
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse, raw: string) {
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    let body: Record<string, unknown> | undefined;
    try {
      body = raw === '' ? undefined : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      send(response, 400, { error: { message: 'bad json', type: 'invalid_request_error', code: 400 } });
      return;
    }
    fake.requests.push({ method: request.method ?? 'GET', path, body, authorization: request.headers.authorization, at: Date.now() });
    const index = fake.faults.findIndex((f) => path.startsWith(f.path));
    if (index >= 0) {
      const [{ fault }] = fake.faults.splice(index, 1) as [{ path: string; fault: Fault }];
      if (fault.kind === 'status') {
        send(response, fault.status, fault.body ?? { error: { message: `injected ${fault.status}`, type: 'server_error', code: fault.status } }, fault.retryAfter ? { 'retry-after': fault.retryAfter } : {});
        return;
      }
      if (fault.kind === 'hang') {
        await wait(fault.ms);
        send(response, 200, { error: 'too late' });
        return;
      }
      if (fault.kind === 'bytes') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(fault.body);
        return;
      }
      if (fault.kind === 'raw') {
        send(response, fault.status ?? 200, fault.body);
        return;
      }
      send(response, fault.status ?? 200, fault.body);
      return;
    }
    if (request.method === 'GET' && path === '/v1/models') {
      send(response, 200, { object: 'list', data: fake.models.map((m) => ({ object: 'model', owned_by: 'fake', ...m })) });
      return;
    }
    if (request.method === 'POST' && path === '/tokenize') {
      if (!fake.tokenize) {
        send(response, 404, { detail: 'Not Found' });
        return;
      }
      const text = String(body?.prompt ?? '');
      const count = words(text);
      send(response, 200, { count, max_model_len: 512, tokens: Array.from({ length: count }, (_, i) => i) });
      return;
    }
    if (request.method === 'POST' && (path === '/v1/completions' || path === '/v1/chat/completions')) {
      const model = String(body?.model ?? '');
      if (!fake.models.some((m) => m.id === model)) {
        send(response, 404, { error: { message: `model ${model} not found`, type: 'invalid_request_error', code: 404 } });
        return;
      }
      inFlight += 1;
      fake.maxInFlight = Math.max(fake.maxInFlight, inFlight);
      try {
        if (fake.latencyMs > 0) await wait(fake.latencyMs);
        const prompt = promptOf(body) ?? '';
        const maxTokens = Number(body?.max_tokens ?? 16);
        const full = fake.answer(prompt, maxTokens, model).split(/(\s+)/);
        const kept: string[] = [];
        let tokens = 0;
        for (const part of full) {
          if (part.trim() !== '') {
            if (tokens >= maxTokens) break;
            tokens += 1;
          }
          kept.push(part);
        }
        const text = kept.join('');
        const finish = tokens >= maxTokens && kept.length < full.length ? 'length' : 'stop';
        const usage = { prompt_tokens: words(prompt), completion_tokens: tokens, total_tokens: words(prompt) + tokens };
        if (path === '/v1/completions') {
          send(response, 200, { id: 'cmpl-1', object: 'text_completion', model, choices: [{ index: 0, text, finish_reason: finish }], usage });
        } else {
          send(response, 200, {
            id: 'chatcmpl-1',
            object: 'chat.completion',
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish }],
            usage,
          });
        }
      } finally {
        inFlight -= 1;
      }
      return;
    }
    send(response, 404, { error: { message: `no route ${request.method} ${path}`, type: 'invalid_request_error', code: 404 } });
  }

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      handle(request, response, Buffer.concat(chunks).toString('utf8')).catch(() => send(response, 500, { error: 'fake failed' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      for (const timer of timers) clearTimeout(timer);
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return fake;
}
