// Load generation: keep-alive POSTs timed to the full answer, open-loop arrivals, one channel per loop.
import http from 'node:http';
import { sleep } from '../test/kit/wait.js';

export const keepAliveAgent = (maxSockets = 256) => new http.Agent({ keepAlive: true, maxSockets });

export interface PostResult {
  status: number;
  ms: number;
  body: string;
}

/** POSTs a body over a keep-alive agent and times the full answer. */
export function post(agent: http.Agent, url: string, body: string, headers: Record<string, string>): Promise<PostResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: 0, ms: performance.now() - started, body: '' }));
    });
    req.on('error', (e) => resolve({ status: 0, ms: performance.now() - started, body: String(e) }));
    req.end(body);
  });
}

/** Open-loop load: calls `fire(i)` at `rate` per second for `durationMs`, whatever the answers' latency. */
export async function openLoop(rate: number, durationMs: number, fire: (i: number) => Promise<void>): Promise<{ sent: number; maxLagMs: number }> {
  const total = Math.round((rate * durationMs) / 1000);
  const interval = 1000 / rate;
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  let maxLagMs = 0;
  for (let i = 0; i < total; i += 1) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    maxLagMs = Math.max(maxLagMs, performance.now() - due);
    inflight.push(fire(i));
  }
  await Promise.all(inflight);
  return { sent: total, maxLagMs };
}

/** A Slack channel id for loop `i` (each loop its own channel, so per-channel pacing never couples them). */
export const channelFor = (i: number) => `CB${i.toString(36).toUpperCase().padStart(6, '0')}`;
