// Slack's failures, on demand and by rule: injected errors per method, and the per-channel posting rate.
import type { FakeSlackOptions, SlackFailure } from './types.js';
import type { Answer } from './wire.js';

export interface Faults {
  /** The next injected failure of `method`, if any, as Slack answers it. */
  injected(method: string): Answer | undefined;
  /** Records a chat.postMessage to `channel`; true when it must be answered 429 (only with `enforceRateLimit`). */
  rateLimited(channel: string, now: number): boolean;
  /** Records a chat.update of `teamId`; seconds to wait when it must be answered 429 (tier 3, only with `enforceRateLimit`). */
  updateRateLimited(teamId: string, now: number): number | undefined;
  failNext(method: string, n: number, response: SlackFailure): void;
  clear(): void;
}

export function createFaults(options: FakeSlackOptions, violations: string[]): Faults {
  const scale = options.paceScale ?? 1;
  const rateLimit = options.rateLimit ?? { max: 3, windowMs: 1000 * scale };
  const failures = new Map<string, SlackFailure[]>();
  const postTimes = new Map<string, number[]>();
  const updateLimit = options.updateRateLimit ?? { max: 50, windowMs: 60_000 * scale };
  const updateTimes = new Map<string, number[]>();
  return {
    injected: (method) => {
      const queue = failures.get(method);
      const failure = queue?.shift();
      if (!failure) return undefined;
      if (queue && queue.length === 0) failures.delete(method);
      const error =
        failure.error ?? (failure.status === 429 ? 'ratelimited' : failure.status >= 500 ? 'internal_error' : 'fatal_error');
      const retryAfter = failure.retryAfter ?? (failure.status === 429 ? 1 : undefined);
      return {
        status: failure.status,
        body: { ok: false, error },
        ...(retryAfter !== undefined ? { headers: { 'Retry-After': String(retryAfter) } } : {}),
      };
    },
    rateLimited: (channel, now) => {
      const times = (postTimes.get(channel) ?? []).filter((t) => now - t < rateLimit.windowMs);
      const exceeded = times.length >= rateLimit.max;
      if (exceeded) {
        violations.push(
          `chat.postMessage: more than ${rateLimit.max} posts to ${channel} within ${rateLimit.windowMs} ms (Slack allows about 1 per second per channel)`,
        );
      }
      if (!(exceeded && options.enforceRateLimit)) times.push(now);
      postTimes.set(channel, times);
      return exceeded && options.enforceRateLimit === true;
    },
    updateRateLimited: (teamId, now) => {
      const times = (updateTimes.get(teamId) ?? []).filter((t) => now - t < updateLimit.windowMs);
      const exceeded = times.length >= updateLimit.max;
      if (exceeded) {
        violations.push(`chat.update: more than ${updateLimit.max} calls in ${teamId} within ${updateLimit.windowMs} ms (tier 3)`);
      }
      if (!(exceeded && options.enforceRateLimit)) times.push(now);
      updateTimes.set(teamId, times);
      if (!(exceeded && options.enforceRateLimit === true)) return undefined;
      return Math.max(1, Math.ceil((times[0]! + updateLimit.windowMs - now) / 1000));
    },
    failNext: (method, n, response) => {
      const queue = failures.get(method) ?? [];
      for (let i = 0; i < n; i += 1) queue.push({ ...response });
      failures.set(method, queue);
    },
    clear: () => {
      failures.clear();
      postTimes.clear();
      updateTimes.clear();
    },
  };
}
