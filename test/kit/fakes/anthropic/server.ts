// Scripted Messages API server on loopback: real response and error shapes, honest token usage and prompt caching.
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Anthropic from '@anthropic-ai/sdk';

/** The JSON body the client sent to `POST /v1/messages`. */
export type MessagesRequest = Anthropic.MessageCreateParams;

export type StopReason = Anthropic.StopReason;

export interface TextReply {
  type: 'text';
  text: string;
}

export interface ToolUseReply {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

/** A content block of the assistant's reply; any other block type is passed through as given. */
export type ReplyBlock = TextReply | ToolUseReply | { type: string; [key: string]: unknown };

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/** An error answer in the API's shape. */
export interface ScriptError {
  status: number;
  type: AnthropicErrorType;
  message?: string;
  /** Seconds for the `retry-after` header; 429 answers carry `retry-after: 1` unless set. */
  retryAfter?: number;
  /** Sends `x-should-retry: true|false`, which the SDK obeys over its status rules. */
  shouldRetry?: boolean;
}

export type ScriptReply =
  | { content: ReplyBlock[]; stopReason?: StopReason; stopSequence?: string | null }
  | { error: ScriptError }
  | { delayMs: number; then: ScriptReply };

export interface ScriptContext {
  /** How many times the script was consulted before this call (injected failures do not count). */
  callIndex: number;
  /** Index of this request in `requests`. */
  requestIndex: number;
}

export type Script = (req: MessagesRequest, ctx: ScriptContext) => ScriptReply | Promise<ScriptReply>;

export interface RecordedRequest {
  path: string;
  body: MessagesRequest;
  headers: IncomingHttpHeaders;
  at: number;
  bytes: number;
  /** HTTP status answered; 0 while pending or when the client went away first. */
  status: number;
  response?: unknown;
  /** True when the client closed the connection before the (delayed) answer. */
  aborted?: boolean;
}

export interface ScriptedAnthropicOptions {
  /** When set, only this key is accepted (as `x-api-key` or `Authorization: Bearer`). */
  apiKey?: string;
  /** Prefixes shorter than this are not cached, like the API's per-model minimum; 0 by default. */
  minCacheableTokens?: number;
}

export interface ScriptedAnthropic {
  /** Value for the client's `baseURL`, e.g. `http://127.0.0.1:1234`. */
  baseURL: string;
  requests: RecordedRequest[];
  /** Errors thrown by the script (each answered as a 500 api_error). */
  scriptErrors: unknown[];
  setScript(script: Script): void;
  /** The next `n` requests get this error before the script is consulted. */
  failNext(n: number, error: ScriptError): void;
  /** Every request in the next `ms` milliseconds gets this error. */
  failFor(ms: number, error: ScriptError): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  clearCache(): void;
  reset(): void;
  stop(): Promise<void>;
}

const DEFAULT_MESSAGES: Record<AnthropicErrorType, string> = {
  invalid_request_error: 'Invalid request',
  authentication_error: 'invalid x-api-key',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'Not found',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'This request would exceed the rate limit for your organization. Please try again later.',
  api_error: 'Internal server error',
  overloaded_error: 'Overloaded',
};

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const randomId = (length: number): string =>
  Array.from(randomBytes(length), (byte) => BASE62[byte % BASE62.length]).join('');

const tokens = (chars: number): number => Math.ceil(chars / 4);

/** A text content block for a scripted reply. */
export function text(s: string): TextReply {
  return { type: 'text', text: s };
}

/** A tool_use content block for a scripted reply, with a fresh `toolu_…` id unless one is given. */
export function toolUse(name: string, input: unknown, id?: string): ToolUseReply {
  return { type: 'tool_use', id: id ?? `toolu_01${randomId(22)}`, name, input };
}

type Block = Record<string, unknown> & { type?: unknown };

const contentBlocks = (content: unknown): Block[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? (content as Block[]) : [];

/** The content blocks of the last user message (a string content becomes one text block). */
export function lastUserContent(req: MessagesRequest): Anthropic.ContentBlockParam[] {
  const last = [...req.messages].reverse().find((m) => m.role === 'user');
  return last ? (contentBlocks(last.content) as unknown as Anthropic.ContentBlockParam[]) : [];
}

export type ResolvedToolResult = Anthropic.ToolResultBlockParam & { name: string | undefined; input: unknown };

/** The tool_result blocks of the last user message, each with the name and input of its tool_use. */
export function lastToolResults(req: MessagesRequest): ResolvedToolResult[] {
  const index = req.messages.map((m) => m.role).lastIndexOf('user');
  if (index === -1) return [];
  const previous = [...req.messages.slice(0, index)].reverse().find((m) => m.role === 'assistant');
  const uses = new Map<string, Block>();
  for (const block of contentBlocks(previous?.content)) {
    if (block.type === 'tool_use' && typeof block.id === 'string') uses.set(block.id, block);
  }
  return contentBlocks(req.messages[index]?.content)
    .filter((b) => b.type === 'tool_result')
    .map((b) => {
      const result = b as unknown as Anthropic.ToolResultBlockParam;
      const use = uses.get(result.tool_use_id);
      return { ...result, name: typeof use?.name === 'string' ? use.name : undefined, input: use?.input };
    });
}

function blockText(block: Block): string[] {
  if (block.type === 'text' && typeof block.text === 'string') return [block.text];
  if (block.type === 'tool_result') return contentBlocks(block.content).flatMap(blockText);
  return [];
}

/** All text of the request: system prompt, text blocks and tool results, joined by newlines. */
export function allText(req: MessagesRequest): string {
  const parts = contentBlocks(req.system).flatMap(blockText);
  for (const message of req.messages) parts.push(...contentBlocks(message.content).flatMap(blockText));
  return parts.join('\n');
}

interface Segment {
  json: string;
  breakpoint?: '5m' | '1h';
}

function stripCacheControl(block: unknown): string {
  if (typeof block !== 'object' || block === null) return JSON.stringify(block);
  const { cache_control: _ignored, ...rest } = block as Record<string, unknown>;
  return JSON.stringify(rest);
}

function ttlOf(block: unknown): '5m' | '1h' | undefined {
  if (typeof block !== 'object' || block === null) return undefined;
  const cc = (block as { cache_control?: { type?: string; ttl?: string } | null }).cache_control;
  if (!cc || cc.type !== 'ephemeral') return undefined;
  return cc.ttl === '1h' ? '1h' : '5m';
}

/** Flattens the request in the API's caching order (tools, system, messages) into blocks. */
function segmentsOf(req: MessagesRequest): Segment[] {
  const segments: Segment[] = [];
  const push = (block: unknown, extra: Record<string, unknown> = {}) => {
    const breakpoint = ttlOf(block);
    const body = stripCacheControl(block);
    const json = Object.keys(extra).length > 0 ? `${JSON.stringify(extra)}${body}` : body;
    segments.push({ json, ...(breakpoint ? { breakpoint } : {}) });
  };
  for (const tool of Array.isArray(req.tools) ? req.tools : []) push(tool);
  for (const block of contentBlocks(req.system)) push(block);
  (Array.isArray(req.messages) ? req.messages : []).forEach((message, i) => {
    for (const block of contentBlocks(message.content)) push(block, { role: message.role, i });
  });
  const auto = req.cache_control;
  const last = segments.at(-1);
  if (auto && auto.type === 'ephemeral' && last && !last.breakpoint) last.breakpoint = auto.ttl === '1h' ? '1h' : '5m';
  return segments;
}

function validate(req: unknown): string | undefined {
  if (typeof req !== 'object' || req === null) return 'body: Input should be an object';
  const r = req as Record<string, unknown>;
  if (typeof r.model !== 'string') return 'model: Field required';
  if (typeof r.max_tokens !== 'number') return 'max_tokens: Field required';
  if (!Array.isArray(r.messages)) return 'messages: Field required';
  if (r.messages.length === 0) return 'messages: at least one message is required';
  if (r.stream === true) return 'stream: streaming is not supported by the scripted fake Messages API; send stream: false';
  const messages = r.messages as { role?: unknown; content?: unknown }[];
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'user' && message.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const blocks = contentBlocks(message.content);
    const isFinalAssistant = i === messages.length - 1 && message.role === 'assistant';
    if (blocks.length === 0 || (typeof message.content === 'string' && message.content === '')) {
      if (!isFinalAssistant) return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'text' && block.text === '' && Array.isArray(message.content)) {
        return `messages.${i}.content.${j}.text: text content blocks must be non-empty`;
      }
    }
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    if (message.role === 'assistant' && uses.length > 0) {
      const next = messages[i + 1];
      const answered = new Set(contentBlocks(next?.content).filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id)));
      const missing = uses.filter((id) => !answered.has(id));
      if (missing.length > 0 && next !== undefined) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
    }
    if (message.role === 'user') {
      const results = blocks.map((b, j) => ({ b, j })).filter(({ b }) => b.type === 'tool_result');
      if (results.length > 0) {
        const previous = messages[i - 1];
        const known = new Set(
          previous?.role === 'assistant' ? contentBlocks(previous.content).filter((b) => b.type === 'tool_use').map((b) => String(b.id)) : [],
        );
        for (const { b, j } of results) {
          if (!known.has(String(b.tool_use_id))) {
            return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
          }
        }
        const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
        const lastResult = results.at(-1)?.j ?? -1;
        if (firstOther !== -1 && firstOther < lastResult) {
          return `messages.${i}: \`tool_result\` blocks must come first in the user message content, before any other block`;
        }
      }
    }
  }
  if (Array.isArray(r.tools)) {
    const names = (r.tools as { name?: unknown }[]).map((t) => t.name);
    if (new Set(names).size !== names.length) return 'tools: Tool names must be unique.';
  }
  const breakpoints = segmentsOf(req as MessagesRequest).filter((s) => s.breakpoint).length;
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  return undefined;
}

/**
 * Starts the scripted Messages API on an ephemeral loopback port. Point the SDK at it with
 * `new Anthropic({ apiKey, baseURL: fake.baseURL })`.
 */
export async function startScriptedAnthropic(script: Script, options: ScriptedAnthropicOptions = {}): Promise<ScriptedAnthropic> {
  let current = script;
  let callIndex = 0;
  const requests: RecordedRequest[] = [];
  const scriptErrors: unknown[] = [];
  const failures: ScriptError[] = [];
  let failWindow: { until: number; error: ScriptError } | undefined;
  const cache = new Map<string, { expiresAt: number; ttlMs: number }>();
  const timers = new Set<NodeJS.Timeout>();
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  const minCacheable = options.minCacheableTokens ?? 0;

  const send = (
    res: ServerResponse,
    record: RecordedRequest | undefined,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
    requestId = `req_011C${randomId(20)}`,
  ) => {
    if (record) {
      record.status = status;
      record.response = body;
      emitter.emit('answered');
    }
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...headers });
    res.end(JSON.stringify(body));
  };

  const sendError = (res: ServerResponse, record: RecordedRequest | undefined, error: ScriptError) => {
    const headers: Record<string, string> = {};
    const retryAfter = error.retryAfter ?? (error.status === 429 ? 1 : undefined);
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    if (error.shouldRetry !== undefined) headers['x-should-retry'] = String(error.shouldRetry);
    const requestId = `req_011C${randomId(20)}`;
    const body = {
      type: 'error',
      error: { type: error.type, message: error.message ?? DEFAULT_MESSAGES[error.type] },
      request_id: requestId,
    };
    send(res, record, error.status, body, headers, requestId);
  };

  const usageFor = (req: MessagesRequest) => {
    const segments = segmentsOf(req);
    const now = Date.now();
    const prefixChars: number[] = [];
    const hashes: string[] = [];
    let chars = 0;
    let hash = createHash('sha256').update(req.model).digest('hex');
    for (const segment of segments) {
      chars += segment.json.length;
      hash = createHash('sha256').update(hash).update(segment.json).digest('hex');
      prefixChars.push(chars);
      hashes.push(hash);
    }
    const total = tokens(chars);
    const breakpoints = segments
      .map((s, i) => ({ i, ttl: s.breakpoint }))
      .filter((b): b is { i: number; ttl: '5m' | '1h' } => b.ttl !== undefined && tokens(prefixChars[b.i] ?? 0) >= minCacheable);
    const last = breakpoints.at(-1);
    if (!last) return { input: total, read: 0, creation: 0, ttl: '5m' as const, total };
    let hit = -1;
    for (const bp of breakpoints) {
      for (let i = bp.i; i >= Math.max(0, bp.i - 19); i -= 1) {
        const entry = cache.get(hashes[i] ?? '');
        if (entry && entry.expiresAt > now) {
          if (i > hit) hit = i;
          break;
        }
      }
    }
    const hitEntry = hit >= 0 ? cache.get(hashes[hit] ?? '') : undefined;
    if (hitEntry) hitEntry.expiresAt = now + hitEntry.ttlMs;
    const read = hit >= 0 ? tokens(prefixChars[hit] ?? 0) : 0;
    const cached = tokens(prefixChars[last.i] ?? 0);
    for (const bp of breakpoints) {
      const key = hashes[bp.i] ?? '';
      const ttlMs = bp.ttl === '1h' ? 3_600_000 : 300_000;
      if (!cache.has(key) || (cache.get(key)?.expiresAt ?? 0) <= now) cache.set(key, { expiresAt: now + ttlMs, ttlMs });
    }
    return { input: total - cached, read, creation: Math.max(0, cached - read), ttl: last.ttl, total };
  };

  const messageFor = (req: MessagesRequest, reply: { content: ReplyBlock[]; stopReason?: StopReason; stopSequence?: string | null }) => {
    let content = reply.content;
    let stopReason: StopReason = reply.stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
    if (!reply.stopReason && tokens(JSON.stringify(content).length) > req.max_tokens) {
      stopReason = 'max_tokens';
      const kept: ReplyBlock[] = [];
      let budget = req.max_tokens * 4;
      for (const block of content) {
        const size = JSON.stringify(block).length;
        if (size <= budget) {
          kept.push(block);
          budget -= size;
          continue;
        }
        if (block.type === 'text' && typeof block.text === 'string' && budget > 0) {
          kept.push({ type: 'text', text: block.text.slice(0, Math.max(0, budget - 30)) });
        }
        break;
      }
      content = kept;
    }
    const usage = usageFor(req);
    return {
      id: `msg_01${randomId(22)}`,
      type: 'message',
      role: 'assistant',
      model: req.model,
      content,
      stop_reason: stopReason,
      stop_sequence: reply.stopSequence ?? null,
      stop_details: null,
      container: null,
      usage: {
        input_tokens: usage.input,
        cache_creation_input_tokens: usage.creation,
        cache_read_input_tokens: usage.read,
        cache_creation: {
          ephemeral_5m_input_tokens: usage.ttl === '5m' ? usage.creation : 0,
          ephemeral_1h_input_tokens: usage.ttl === '1h' ? usage.creation : 0,
        },
        output_tokens: tokens(JSON.stringify(content).length),
        service_tier: 'standard',
        server_tool_use: null,
      },
    };
  };

  const wait = (ms: number, res: ServerResponse) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, Math.min(Math.max(0, ms), 2 ** 31 - 1));
      timers.add(timer);
      res.once('close', () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve();
      });
    });

  const answer = async (res: ServerResponse, record: RecordedRequest, reply: ScriptReply): Promise<void> => {
    if ('delayMs' in reply) {
      await wait(reply.delayMs, res);
      if (res.destroyed || res.writableEnded) {
        record.aborted = true;
        emitter.emit('answered');
        return;
      }
      await answer(res, record, reply.then);
      return;
    }
    if ('error' in reply) {
      sendError(res, record, reply.error);
      return;
    }
    send(res, record, 200, messageFor(record.body, reply));
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks);
        const path = new URL(req.url ?? '/', 'http://localhost').pathname;
        let body: unknown;
        try {
          body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
        } catch {
          body = undefined;
        }
        const record: RecordedRequest = { path, body: body as MessagesRequest, headers: req.headers, at: Date.now(), bytes: raw.length, status: 0 };
        const requestIndex = requests.length;
        requests.push(record);
        emitter.emit('request');

        const isMessages = path === '/v1/messages';
        const isCount = path === '/v1/messages/count_tokens';
        if (req.method !== 'POST' || (!isMessages && !isCount)) {
          sendError(res, record, { status: 404, type: 'not_found_error', message: `Not found: ${req.method} ${path}` });
          return;
        }
        const bearer = req.headers.authorization?.replace(/^Bearer\s+/i, '');
        const key = (req.headers['x-api-key'] as string | undefined) ?? bearer;
        if (!key) {
          sendError(res, record, { status: 401, type: 'authentication_error', message: 'x-api-key header is required' });
          return;
        }
        if (options.apiKey !== undefined && key !== options.apiKey) {
          sendError(res, record, { status: 401, type: 'authentication_error', message: 'invalid x-api-key' });
          return;
        }
        if (!req.headers['anthropic-version']) {
          sendError(res, record, { status: 400, type: 'invalid_request_error', message: 'anthropic-version: header is required' });
          return;
        }
        if (body === undefined) {
          sendError(res, record, { status: 400, type: 'invalid_request_error', message: 'There was an issue with your request body: invalid JSON' });
          return;
        }
        const injected = failures.shift() ?? (failWindow && Date.now() < failWindow.until ? failWindow.error : undefined);
        if (injected) {
          sendError(res, record, injected);
          return;
        }
        const invalid = validate(isCount ? { max_tokens: 0, ...(body as object) } : body);
        if (invalid) {
          sendError(res, record, { status: 400, type: 'invalid_request_error', message: invalid });
          return;
        }
        if (isCount) {
          send(res, record, 200, { input_tokens: tokens(segmentsOf(record.body).reduce((n, s) => n + s.json.length, 0)) });
          return;
        }
        let reply: ScriptReply;
        try {
          reply = await current(record.body, { callIndex: callIndex++, requestIndex });
        } catch (error) {
          scriptErrors.push(error);
          sendError(res, record, { status: 500, type: 'api_error', message: `scripted fake: the script threw: ${String(error)}` });
          return;
        }
        await answer(res, record, reply);
      })().catch((error: unknown) => {
        scriptErrors.push(error);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(error));
      });
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseURL,
    requests,
    scriptErrors,
    setScript: (next) => {
      current = next;
    },
    failNext: (n, error) => {
      for (let i = 0; i < n; i += 1) failures.push({ ...error });
    },
    failFor: (ms, error) => {
      failWindow = { until: Date.now() + ms, error: { ...error } };
    },
    waitForRequests: (count, timeoutMs = 5000) => {
      const done = () => requests.length >= count && requests.slice(0, count).every((r) => r.status !== 0 || r.aborted);
      if (done()) return Promise.resolve(requests.slice(0, count));
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!done()) return;
          cleanup();
          resolve(requests.slice(0, count));
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`scripted Anthropic: ${requests.length} of ${count} requests answered within ${timeoutMs} ms`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          emitter.off('answered', check);
        };
        emitter.on('answered', check);
      });
    },
    clearCache: () => cache.clear(),
    reset: () => {
      requests.length = 0;
      scriptErrors.length = 0;
      failures.length = 0;
      failWindow = undefined;
      callIndex = 0;
      cache.clear();
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
