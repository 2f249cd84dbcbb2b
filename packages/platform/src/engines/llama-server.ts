// Embedded OpenAI-compatible inference server: every GGUF in a folder, plus LoRA adapters loaded at run time, served by node-llama-cpp on loopback.
// Its parts: llama-server/options.ts (the options and public shapes), registry.ts (models and adapters), generation.ts (the sequence pool and stop strings), handlers.ts (the routes), requests.ts (bodies and errors); this file wires them to HTTP.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { createSequencePool } from './llama-server/generation.js';
import { createHandlers } from './llama-server/handlers.js';
import type { LlamaServer, LlamaServerOptions } from './llama-server/options.js';
import { createModelRegistry } from './llama-server/registry.js';
import { ApiError, readJson } from './llama-server/requests.js';

export type { Evaluation, LlamaServer, LlamaServerLogger, LlamaServerOptions } from './llama-server/options.js';

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
  let closed = false;
  /** Aborted on close: generations under way stop, so nothing runs on a disposed model. */
  const shutdown = new AbortController();
  const registry = createModelRegistry({ modelsDir, llama, parallel, threads: opts.threads, contextSize: opts.contextSize, logger });
  const pool = createSequencePool({ registry, parallel, maxQueue: opts.maxQueue ?? 1024, closed: () => closed, logger });
  const handlers = createHandlers({ registry, pool, shutdown, onEvaluated: opts.onEvaluated, logger });

  const routes: Record<string, (body: unknown) => Promise<object | string>> = {
    'POST /v1/completions': handlers.completions,
    'POST /v1/chat/completions': handlers.chatCompletions,
    'POST /tokenize': handlers.tokenize,
    'POST /v1/load_lora_adapter': handlers.loadLora,
    'POST /v1/unload_lora_adapter': handlers.unloadLora,
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    const method = req.method ?? 'GET';
    try {
      if (closed) throw new ApiError(503, 'server_error', 'shutting_down', 'the server is shutting down');
      let result: object | string;
      if (method === 'GET' && path === '/v1/models') result = await handlers.listModels();
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
      await pool.settled();
      await new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeIdleConnections();
      });
      await llama.dispose();
    },
  };
}
