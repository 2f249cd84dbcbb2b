// Prompt caching as the API does it: cache breakpoints in tools -> system -> messages order, a
// 20-block lookback, 5-minute and 1-hour lifetimes refreshed on a hit, and the usage it reports.
import { createHash } from 'node:crypto';
import { contentBlocks } from './script.js';
import type { MessagesRequest } from './types.js';

/** Tokens of `chars` characters of JSON, about four characters a token. */
export const tokens = (chars: number): number => Math.ceil(chars / 4);

export interface Segment {
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
export function segmentsOf(req: MessagesRequest): Segment[] {
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

/** Token counts of one request as the API reports them; `ttl` is the lifetime of what it wrote. */
export interface Usage {
  input: number;
  read: number;
  creation: number;
  ttl: '5m' | '1h';
  total: number;
}

export interface PromptCache {
  /** Looks the request's prefixes up (refreshing a hit), writes its breakpoints, and returns its usage. */
  usageFor(req: MessagesRequest): Usage;
  clear(): void;
}

/** A prompt cache; prefixes shorter than `minCacheable` tokens are not cached, like the API's per-model minimum. */
export function createPromptCache(minCacheable: number): PromptCache {
  const cache = new Map<string, { expiresAt: number; ttlMs: number }>();
  const usageFor = (req: MessagesRequest): Usage => {
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
  return { usageFor, clear: () => cache.clear() };
}
