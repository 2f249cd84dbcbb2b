import { describe, expect, it } from 'vitest';
import { costUsd, parsePriceOverrides, pricesFor } from '../../src/agent/pricing.js';

describe('pricing', () => {
  it('prices every kind of token at its own rate, exactly', () => {
    const prices = pricesFor('claude-sonnet-4-5')!;
    // 1M input at $3 + 1M output at $15 + 1M cache write at $3.75 + 1M cache read at $0.30
    expect(
      costUsd({ inputTokens: 1_000_000, outputTokens: 1_000_000, cacheWriteTokens: 1_000_000, cacheReadTokens: 1_000_000 }, prices),
    ).toBe('22.0500000000');
    expect(costUsd({ inputTokens: 1, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0 }, prices)).toBe('0.0000030000');
    expect(costUsd({ inputTokens: 0, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 7 }, prices)).toBe('0.0000021000');
  });

  it('finds dated model ids by their family prefix and lets configuration override', () => {
    expect(pricesFor('claude-sonnet-4-5-20250929')).toEqual(pricesFor('claude-sonnet-4-5'));
    expect(pricesFor('claude-haiku-4-5-20251001')!.input).toBe(1);
    expect(pricesFor('unknown-model')).toBeUndefined();
    const overrides = parsePriceOverrides('{"claude-sonnet-4-5":{"input":1,"output":2,"cacheRead":0.05}}');
    expect(pricesFor('claude-sonnet-4-5', overrides)).toEqual({ input: 1, output: 2, cacheWrite: 1.25, cacheRead: 0.05 });
  });

  it('costs nothing for an unknown model rather than guessing', () => {
    expect(costUsd({ inputTokens: 10, outputTokens: 10, cacheWriteTokens: 0, cacheReadTokens: 0 }, undefined)).toBe('0.0000000000');
  });

  it('rejects malformed overrides with a message naming the field', () => {
    expect(() => parsePriceOverrides('nope')).toThrow(/must be JSON/);
    expect(() => parsePriceOverrides('{"m":{"input":-1,"output":1}}')).toThrow(/m\.input/);
  });
});
