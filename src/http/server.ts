// The bot's one HTTP server: health, the platform webhook route and, in HTTP mode, Slack's requests.
import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { INBOUND_LIMITS } from '../slack/limits.js';
import { pingDatabase, type Db } from '../store/db.js';

export interface HttpServerOptions {
  db: Db;
  logger: Logger;
  port: number;
  host?: string;
  /** Slack's requests; a POST arrives with its body already read (at most {@link INBOUND_LIMITS}) as `rawBody`. */
  slack: RequestListener | undefined;
  webhook: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** OAuth mode, both Slack modes: the install page and the OAuth callback (src/slack/oauth.ts); true when it answered. */
  install?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Socket Mode connection state; /healthz fails while it is not 'connected'. Absent in HTTP mode. */
  socketState?: () => string;
  /** True while the bot is still starting; /healthz then answers 503 "starting". */
  starting?: () => boolean;
}

export const WEBHOOK_PATH = '/webhooks/platform';

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Reads a request body up to `limit` bytes; returns undefined when it is larger. */
export async function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads a body of at most `limit` bytes without holding more: a declared `content-length` above it is
 * refused before a byte is read, a longer chunked body as soon as it passes the limit. Returns
 * undefined when too large (the caller answers 413 with {@link refuseTooLarge}), null when the client
 * went away before the body ended (nothing to answer).
 */
export async function readBoundedBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined | null> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return undefined;
  return new Promise<Buffer | undefined | null>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    // The request stream fails or closes early only when the client goes away (an aborted upload).
    const onClose = () => {
      cleanup();
      chunks.length = 0;
      resolve(null);
    };
    const onError = onClose;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * How long a refused body is still drained (and dropped) so the 413 reaches the client before the
 * connection closes. Time only, as nginx's lingering close: a byte cap (16 MiB, tried) closed the
 * connection of a 20 MB upload within about 100 ms, and a client on a loaded machine had not read
 * the 413 by then (the reset threw it away: `write ECONNRESET` in 3 of 6 full test runs).
 */
const LINGER_MS = 5000;

/**
 * Answers 413, then closes the connection after a lingering drain: closing a socket with unread
 * data resets it, and the reset can destroy the answer before the client reads it. A client that
 * finishes sending gets a graceful close at once. Nothing drained is kept.
 */
export function refuseTooLarge(req: IncomingMessage, res: ServerResponse, limit: number): void {
  const text = JSON.stringify({ error: `body too large: at most ${limit} bytes` });
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
  const timer = setTimeout(() => req.socket.destroy(), LINGER_MS);
  req.socket.once('close', () => clearTimeout(timer));
  req.on('error', () => undefined);
  // Everything read: no reset can eat the answer now, so end gracefully (after the 413 is flushed).
  req.on('end', () => req.socket.end());
  req.resume();
}

async function handleSlack(slack: RequestListener, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'POST') {
    const limit = INBOUND_LIMITS.requestBodyBytes;
    const body = await readBoundedBody(req, limit);
    if (body === null) return;
    if (body === undefined) return refuseTooLarge(req, res, limit);
    (req as IncomingMessage & { rawBody?: Buffer }).rawBody = body;
  }
  try {
    slack(req, res);
  } catch (error) {
    // Bolt throws for a path or method it does not serve.
    if ((error as { code?: string }).code === 'slack_bolt_http_receiver_deferred_request_error') return sendJson(res, 404, { error: 'not found' });
    throw error;
  }
}

export async function startHttpServer(options: HttpServerOptions): Promise<{ server: http.Server; url: string; close(): Promise<void> }> {
  const failed = (what: string, req: IncomingMessage, res: ServerResponse) => (error: unknown) => {
    options.logger.error({ err: error, method: req.method, path: (req.url ?? '/').split('?')[0] }, `${what} failed; the process stays up`);
    if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
    else res.destroy();
  };
  const server = http.createServer((req, res) => {
    try {
      route(req, res);
    } catch (error) {
      failed('request', req, res)(error);
    }
  });
  const route = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') {
      if (options.starting?.()) return sendJson(res, 503, { status: 'starting' });
      const socket = options.socketState?.();
      void pingDatabase(options.db).then((ok) => {
        const socketOk = socket === undefined || socket === 'connected';
        const status = !ok ? 'database unreachable' : !socketOk ? `slack socket ${socket}` : 'ok';
        sendJson(res, ok && socketOk ? 200 : 503, socket === undefined ? { status } : { status, slackSocket: socket });
      });
      return;
    }
    if (path === WEBHOOK_PATH) {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'method not allowed' });
      options.webhook(req, res).catch((error: unknown) => {
        options.logger.error({ err: error }, 'webhook handling failed');
        if (!res.headersSent) sendJson(res, 503, { error: 'temporarily unavailable, retry later' });
      });
      return;
    }
    if (options.install?.(req, res)) return;
    if (options.slack && path?.startsWith('/slack/')) {
      handleSlack(options.slack, req, res).catch(failed('slack request', req, res));
      return;
    }
    sendJson(res, 404, { error: 'not found' });
  };
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
