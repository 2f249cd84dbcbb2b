// The seeded generator and the paired bootstrap: reproducible, and honest about the true mean.
import { describe, expect, it } from 'vitest';
import { bootstrapMeanInterval, quantileSorted } from '../../src/analysis/bootstrap.js';
import { nextInt32, nextUnit, seedRandom } from '../../src/analysis/random.js';

describe('xoshiro128**', () => {
  it('matches the reference algorithm from state (1, 2, 3, 4)', () => {
    const state = new Int32Array([1, 2, 3, 4]);
    const outputs = [nextInt32(state), nextInt32(state), nextInt32(state)].map((x) => x >>> 0);
    expect(outputs).toEqual([11520, 0, 5927040]);
  });

  it('gives the same stream for the same seed and different streams otherwise', () => {
    const draw = (seed: number, stream = 0) => {
      const state = seedRandom(seed, stream);
      return Array.from({ length: 5 }, () => nextInt32(state));
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
    expect(draw(42, 0)).not.toEqual(draw(42, 1));
  });

  it('produces uniform floats in [0, 1)', () => {
    const state = seedRandom(1);
    const buckets = new Array<number>(10).fill(0);
    const n = 100_000;
    for (let i = 0; i < n; i++) {
      const u = nextUnit(state);
      expect(u >= 0 && u < 1).toBe(true);
      buckets[Math.floor(u * 10)]!++;
    }
    for (const count of buckets) expect(Math.abs(count - n / 10)).toBeLessThan(500);
  });
});

describe('paired bootstrap of the mean change', () => {
  function sample(n: number, seed: number, trueMean: number): Float64Array {
    const state = seedRandom(seed, 7);
    const out = new Float64Array(n);
    // Skewed, bounded differences: a mixture whose mean is trueMean.
    for (let i = 0; i < n; i++) {
      const u = nextUnit(state);
      out[i] = u < 0.3 ? trueMean + 0.7 * (nextUnit(state) - 0.5) * 2 : trueMean + 0.1 * (nextUnit(state) - 0.5) * 2;
    }
    return out;
  }

  it('is deterministic for a fixed seed', () => {
    const d = sample(500, 1, 0.03);
    const a = bootstrapMeanInterval(d, 3000, 123);
    const b = bootstrapMeanInterval(d, 3000, 123);
    expect(b).toEqual(a);
    expect(bootstrapMeanInterval(d, 3000, 124)).not.toEqual(a);
  });

  it('covers the true mean change about 95% of the time on synthetic data', () => {
    const trials = 200;
    let covered = 0;
    for (let t = 0; t < trials; t++) {
      const d = sample(200, 1000 + t, 0.05);
      const interval = bootstrapMeanInterval(d, 1000, t);
      if (interval.lower <= 0.05 && 0.05 <= interval.upper) covered++;
    }
    expect(covered / trials).toBeGreaterThan(0.9);
    expect(covered / trials).toBeLessThan(0.99);
  });

  it('agrees with the normal approximation on a large sample', () => {
    const d = sample(20_000, 5, -0.02);
    let mean = 0;
    for (const x of d) mean += x;
    mean /= d.length;
    let ss = 0;
    for (const x of d) ss += (x - mean) ** 2;
    const se = Math.sqrt(ss / (d.length - 1) / d.length);
    const interval = bootstrapMeanInterval(d, 4000, 9);
    expect(interval.lower).toBeCloseTo(mean - 1.96 * se, 3);
    expect(interval.upper).toBeCloseTo(mean + 1.96 * se, 3);
  });

  it('collapses to the value when every difference is the same, and spans everything with no data', () => {
    expect(bootstrapMeanInterval(new Float64Array([0.25, 0.25, 0.25]), 100, 1)).toEqual({ lower: 0.25, upper: 0.25 });
    expect(bootstrapMeanInterval(new Float64Array(0), 100, 1)).toEqual({ lower: -1, upper: 1 });
  });

  it('draws every index, including the first and the last', () => {
    const d = new Float64Array(7);
    d[0] = 1;
    d[6] = -1;
    const interval = bootstrapMeanInterval(d, 2000, 3);
    expect(interval.lower).toBeLessThan(0);
    expect(interval.upper).toBeGreaterThan(0);
  });

  it('draws indices from two interleaved xoshiro128+ streams, as documented', () => {
    const d = Float64Array.from([0, 1, 2, 3, 4]);
    const streams = [seedRandom(77, 0), seedRandom(77, 1)];
    const plus = (s: Int32Array): number => {
      const result = (s[0]! + s[3]!) | 0;
      nextInt32(s);
      return result;
    };
    // Pairs (0, 1), (2, 3) alternate streams; the odd last draw comes from the first stream.
    const draws = [plus(streams[0]!), plus(streams[1]!), plus(streams[0]!), plus(streams[1]!), plus(streams[0]!)];
    const indices = draws.map((r) => Math.floor(((r + 2 ** 31) * d.length) / 2 ** 32));
    const expected = indices.reduce((sum, i) => sum + d[i]!, 0) / d.length;
    const interval = bootstrapMeanInterval(d, 1, 77);
    expect(interval.lower).toBeCloseTo(expected, 6);
    expect(interval.upper).toBeCloseTo(expected, 6);
  });

  it('interpolates percentiles as R type 7', () => {
    const sorted = Float64Array.from([1, 2, 3, 4, 5]);
    expect(quantileSorted(sorted, 0.025)).toBeCloseTo(1.1, 15);
    expect(quantileSorted(sorted, 0.975)).toBeCloseTo(4.9, 15);
    expect(quantileSorted(Float64Array.from([7]), 0.5)).toBe(7);
  });
});
