// The platform's abortable wait (packages/platform/src/sleep.ts): a stop cuts it short, and waits that end leave no listener on the stop's signal.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { sleep } from '@verdict/platform/sleep';

describe('sleep', () => {
  it('waits, and leaves no abort listener behind when it ends on time', async () => {
    const stop = new AbortController();
    const started = performance.now();
    for (let i = 0; i < 50; i++) await sleep(2, stop.signal);
    expect(performance.now() - started).toBeGreaterThanOrEqual(50 * 2 - 5);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });

  it('ends when the signal aborts, and at once when it has, without rejecting', async () => {
    const stop = new AbortController();
    const started = performance.now();
    const waiting = sleep(60_000, stop.signal);
    setTimeout(() => stop.abort(), 20);
    await expect(waiting).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(5_000);
    await expect(sleep(60_000, stop.signal)).resolves.toBeUndefined();
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});
