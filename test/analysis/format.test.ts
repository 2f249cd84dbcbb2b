// Number formatting shared by the verdict sentence and the Slack table.
import { describe, expect, it } from 'vitest';
import {
  formatCount,
  formatPClause,
  formatPercent,
  formatPoints,
  formatPointsRange,
  formatPValue,
  formatSignedPoints,
} from '../../src/analysis/index.js';

describe('formatting', () => {
  it('formats rates as percentages', () => {
    expect(formatPercent(0.61)).toBe('61.0%');
    expect(formatPercent(1)).toBe('100.0%');
    expect(formatPercent(0.12345, 2)).toBe('12.35%');
    expect(formatPercent(null)).toBe('n/a');
  });

  it('formats changes as signed percentage points, never "-0.0"', () => {
    expect(formatPoints(0.13)).toBe('+13.0 pts');
    expect(formatPoints(-0.021)).toBe('-2.1 pts');
    expect(formatPoints(0)).toBe('0.0 pts');
    expect(formatPoints(-0.0001)).toBe('0.0 pts');
    expect(formatPoints(null)).toBe('n/a');
    expect(formatSignedPoints(0.071)).toBe('+7.1');
    expect(formatPointsRange({ lower: -0.015, upper: 0.054 })).toBe('-1.5 to +5.4');
  });

  it('formats p-values as the verdict sentence quotes them', () => {
    expect(formatPValue(0.0023498535)).toBe('0.0023');
    expect(formatPValue(0.73)).toBe('0.73');
    expect(formatPValue(0.041)).toBe('0.041');
    expect(formatPValue(1)).toBe('1');
    expect(formatPValue(0.00004)).toBe('< 0.0001');
    expect(formatPValue(0)).toBe('< 0.0001');
    expect(formatPClause(0.0023498535)).toBe('p = 0.0023');
    expect(formatPClause(1e-9)).toBe('p < 0.0001');
  });

  it('groups thousands', () => {
    expect(formatCount(10_000)).toBe('10,000');
    expect(formatCount(999)).toBe('999');
    expect(formatCount(1_234_567)).toBe('1,234,567');
    expect(formatCount(-4500)).toBe('-4,500');
  });
});
