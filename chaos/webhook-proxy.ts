// A hostile network between the platform and the bot: drops, duplicates, delays and reorders webhooks.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { seeded } from '../test/kit/random.js';
import { sleep } from '../test/kit/wait.js';

export interface WebhookProxy {
  url: string;
  /** Deliveries received from the platform, and copies sent on to the bot(s). */
  received: number;
  forwarded: number;
  dropped: number;
  statuses: Map<number, number>;
  setTargets(targets: string[]): void;
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export interface ProxyFaults {
  /** Share of deliveries swallowed (answered 200, never forwarded). */
  drop?: number;
  /** Share of deliveries forwarded 2-4 times. */
  duplicate?: number;
  /** Copies wait up to this long before being forwarded (so later events overtake earlier ones). */
  maxDelayMs?: number;
}

/**
 * A hostile network between the platform and the bot: forwards webhook deliveries round-robin to
 * the targets, dropping, duplicating, delaying and so reordering them.
 */
export async function startWebhookProxy(targets: string[], faults: ProxyFaults = {}, random = seeded(7)): Promise<WebhookProxy> {
  let list = [...targets];
  let next = 0;
  const pending = new Set<Promise<void>>();
  const proxy: WebhookProxy = {
    url: '',
    received: 0,
    forwarded: 0,
    dropped: 0,
    statuses: new Map(),
    setTargets: (t) => {
      list = [...t];
    },
    idle: async () => {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    stop: async () => undefined,
  };
  const forward = async (body: Buffer, headers: Record<string, string>, delayMs: number) => {
    if (delayMs > 0) await sleep(delayMs);
    for (let tries = 0; tries < list.length * 2; tries += 1) {
      const target = list[next++ % list.length]!;
      try {
        const res = await fetch(target, { method: 'POST', body, headers });
        await res.arrayBuffer();
        proxy.forwarded += 1;
        proxy.statuses.set(res.status, (proxy.statuses.get(res.status) ?? 0) + 1);
        if (res.status < 500) return;
      } catch {
        // a dead replica: try the next one
      }
    }
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      proxy.received += 1;
      const body = Buffer.concat(chunks);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const v = req.headers[name];
        if (typeof v === 'string') headers[name] = v;
      }
      if (random() < (faults.drop ?? 0)) {
        proxy.dropped += 1;
        res.writeHead(200).end('{}');
        return;
      }
      const copies = random() < (faults.duplicate ?? 0) ? 2 + Math.floor(random() * 3) : 1;
      for (let i = 0; i < copies; i += 1) {
        const p = forward(body, headers, Math.floor(random() * (faults.maxDelayMs ?? 0))).finally(() => pending.delete(p));
        pending.add(p);
      }
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/platform`;
  proxy.stop = async () => {
    await proxy.idle();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  return proxy;
}
