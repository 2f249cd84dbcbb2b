// Scripted Messages API server on loopback: real response and error shapes, honest token usage and prompt caching.
// This file routes and records requests, injects failures and consults the script; the rest lives beside it.
import { EventEmitter } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPromptCache, segmentsOf, tokens } from './caching.js';
import { errorAnswer, messageFor } from './responses.js';
import { randomId } from './script.js';
import type { MessagesRequest, RecordedRequest, ScriptedAnthropic, ScriptedAnthropicOptions, Script, ScriptError, ScriptReply } from './types.js';
import { validate } from './validation.js';

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
  const cache = createPromptCache(options.minCacheableTokens ?? 0);
  const timers = new Set<NodeJS.Timeout>();
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);

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
    const { body, headers, requestId } = errorAnswer(error);
    send(res, record, error.status, body, headers, requestId);
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
    send(res, record, 200, messageFor(record.body, reply, cache.usageFor));
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
