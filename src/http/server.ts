// The bot's one HTTP server: health, the platform webhook route and, in HTTP mode, Slack's requests.
import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';

export interface HttpServerOptions {
  db: Db;
  logger: Logger;
  port: number;
  host?: string;
  slack: RequestListener | undefined;
  webhook: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
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

async function databaseReachable(db: Db): Promise<boolean> {
  try {
    await Promise.race([
      sql`select 1`.execute(db),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
    ]);
    return true;
  } catch {
    return false;
  }
}

export async function startHttpServer(options: HttpServerOptions): Promise<{ server: http.Server; url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') {
      if (options.starting?.()) return sendJson(res, 503, { status: 'starting' });
      const socket = options.socketState?.();
      void databaseReachable(options.db).then((ok) => {
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
    if (options.slack && path?.startsWith('/slack/')) {
      options.slack(req, res);
      return;
    }
    sendJson(res, 404, { error: 'not found' });
  });
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
