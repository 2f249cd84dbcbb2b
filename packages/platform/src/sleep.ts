// Waiting that a stop cuts short, for the platform's retry loops and pollers.
import { setTimeout as delay } from 'node:timers/promises';

/** Waits `ms`, or less when `signal` aborts (at once if it has); never rejects, and leaves no abort listener behind. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return delay(ms, undefined, signal ? { signal } : undefined).catch(() => undefined);
}
