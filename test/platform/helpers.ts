// Test helpers for the platform suite: a sandbox on a fresh database, a webhook receiver, polling.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase } from '../kit/database.js';
import { waitUntil } from '../kit/wait.js';
import { createHttpPlatform, type HttpPlatformOptions } from '@verdict/contract/http-client';
import type { Platform } from '@verdict/contract/platform';
import { startSandbox, type SandboxHandle, type SandboxOptions } from '@verdict/platform/sandbox/sandbox';

export interface TestSandbox {
  sandbox: SandboxHandle;
  platform: Platform;
  databaseUrl: string;
}

export async function startTestSandbox(
  options: Partial<SandboxOptions> = {},
  client: Partial<HttpPlatformOptions> = {},
): Promise<TestSandbox> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase('sandbox'));
  const sandbox = await startSandbox({ timeScale: 0.005, tickIntervalMs: 25, ...options, databaseUrl });
  const platform = createHttpPlatform({
    baseUrl: sandbox.url,
    token: sandbox.token,
    timeoutMs: 5_000,
    retryBaseDelayMs: 20,
    ...client,
  });
  return { sandbox, platform, databaseUrl };
}

export interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

export interface Receiver {
  url: string;
  port: number;
  deliveries: Delivery[];
  /** Status code answered to the next deliveries. */
  status: number;
  stop(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const receiver = { status: 200 } as Receiver;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const status = receiver.status;
      if (status >= 200 && status < 300) {
        deliveries.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() });
      }
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actualPort = (server.address() as AddressInfo).port;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${actualPort}/webhooks/platform`,
    port: actualPort,
    deliveries,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

/** Polls `check` (see {@link waitUntil}) with this suite's defaults: 10 s, every 25 ms. */
export function waitFor<T>(check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000, intervalMs = 25): Promise<T> {
  return waitUntil(check, timeoutMs, 'condition', intervalMs);
}

export async function waitForRun(platform: Platform, id: string, timeoutMs = 15_000) {
  return waitFor(async () => {
    const run = await platform.getRun(id);
    return run.status === 'completed' || run.status === 'failed' ? run : undefined;
  }, timeoutMs);
}

export async function waitForTraining(platform: Platform, id: string, timeoutMs = 20_000) {
  return waitFor(async () => {
    const job = await platform.getTraining(id);
    return job.status === 'completed' || job.status === 'failed' ? job : undefined;
  }, timeoutMs);
}
