// Launch report wording: the finish estimate from the platform's estimated_finish_at, benchmark prices in words.
import { describe, expect, it } from 'vitest';
import { describePricing } from '../../src/agent/tools/benchmark-details.js';
import { finishEstimate } from '../../src/agent/tools/launch-report.js';

describe('finishEstimate', () => {
  const now = new Date('2026-12-03T14:26:10Z');
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();

  it('says how long and around when, in UTC', () => {
    expect(finishEstimate(at(6 * 60_000), now)).toBe('about 6 min, around 14:32 UTC');
    expect(finishEstimate(at(20_000), now)).toBe('under a minute, around 14:26 UTC');
    expect(finishEstimate(at(95 * 60_000), now)).toBe('about 1 h 35 min, around 16:01 UTC');
    expect(finishEstimate(at(120 * 60_000), now)).toBe('about 2 h, around 16:26 UTC');
  });

  it('names the date of a finish more than 20 hours away', () => {
    expect(finishEstimate(at(26 * 3_600_000), now)).toBe('about 26 h, around Dec 4 16:26 UTC');
  });

  it('says "any moment now" when the estimate has passed, and nothing without one', () => {
    expect(finishEstimate(at(-5_000), now)).toBe('any moment now (it was due around 14:26 UTC)');
    expect(finishEstimate(null, now)).toBeNull();
    expect(finishEstimate('not a date', now)).toBeNull();
  });
});

describe('describePricing', () => {
  it('puts flat and size-tiered prices in words', () => {
    expect(describePricing({ type: 'flat', credits: 12.5 })).toBe('12.5 credits per run');
    expect(
      describePricing({
        type: 'per_model_size',
        tiers: [
          { maxParams: 1_000_000_000, credits: 4 },
          { maxParams: 3_500_000_000, credits: 8 },
          { maxParams: null, credits: 50 },
        ],
      }),
    ).toBe('per run: up to 1B parameters 4 credits; up to 3.5B parameters 8 credits; larger models 50 credits');
  });

  // The platform charges the first listed tier a model fits in (priceRun): the words say that price,
  // not the one a size-sorted list would give.
  it('describes out-of-order tiers as the platform charges them', () => {
    expect(
      describePricing({
        type: 'per_model_size',
        tiers: [
          { maxParams: null, credits: 50 },
          { maxParams: 1_000_000_000, credits: 4 },
        ],
      }),
    ).toBe('50 credits per run');
    expect(
      describePricing({
        type: 'per_model_size',
        tiers: [
          { maxParams: 3_500_000_000, credits: 8 },
          { maxParams: 1_000_000_000, credits: 4 },
        ],
      }),
    ).toBe('per run: up to 3.5B parameters 8 credits; larger models 4 credits');
  });
});
