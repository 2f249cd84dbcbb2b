// Checks the statistics against values computed by R (scripts/reference/paired-reference.R).
import { describe, expect, it } from 'vitest';
import {
  Z_ALPHA,
  Z_POWER,
  mcnemarExactPValue,
  minimumDetectableChange,
  newcombePairedInterval,
  wilsonInterval,
} from '../../src/analysis/paired-statistics.js';
import reference from './reference-values.json' with { type: 'json' };

interface ReferenceCase {
  name: string;
  bothRight: number;
  fixed: number;
  broken: number;
  bothWrong: number;
  wilsonBefore: [number, number];
  wilsonAfter: [number, number];
  newcombe: [number, number];
  mcnemarP: number;
  detectableChange: number | null;
}

const cases = reference.cases as ReferenceCase[];

/** Relative 1e-9, or absolute 1e-12 near zero. */
function expectClose(actual: number, expected: number, what: string): void {
  const tolerance = Math.max(1e-12, 1e-9 * Math.abs(expected));
  if (!(Math.abs(actual - expected) <= tolerance)) {
    throw new Error(`${what}: expected ${expected}, got ${actual} (difference ${Math.abs(actual - expected)})`);
  }
}

describe('reference values from R', () => {
  it('has a meaningful table of cases', () => {
    expect(cases.length).toBeGreaterThan(60);
  });

  it('uses the same normal quantiles', () => {
    expectClose(Z_ALPHA, reference.constants.zAlpha, 'qnorm(0.975)');
    expectClose(Z_POWER, reference.constants.zPower, 'qnorm(0.8)');
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const n = c.bothRight + c.fixed + c.broken + c.bothWrong;
    const before = wilsonInterval(c.bothRight + c.broken, n);
    const after = wilsonInterval(c.bothRight + c.fixed, n);
    expectClose(before.lower, c.wilsonBefore[0], 'Wilson before, lower');
    expectClose(before.upper, c.wilsonBefore[1], 'Wilson before, upper');
    expectClose(after.lower, c.wilsonAfter[0], 'Wilson after, lower');
    expectClose(after.upper, c.wilsonAfter[1], 'Wilson after, upper');

    const change = newcombePairedInterval(c);
    expectClose(change.lower, c.newcombe[0], 'Newcombe lower');
    expectClose(change.upper, c.newcombe[1], 'Newcombe upper');

    expectClose(mcnemarExactPValue(c.fixed, c.broken), c.mcnemarP, 'McNemar p');

    const detectable = minimumDetectableChange(n, c.fixed + c.broken).value;
    if (c.detectableChange === null) expect(detectable).toBeNull();
    else expectClose(detectable ?? Number.NaN, c.detectableChange, 'minimum detectable change');
  });
});
