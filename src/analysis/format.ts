// Number formatting shared by the verdict sentence and the Slack comparison table.

import type { Interval } from './paired-statistics.js';

const NOT_AVAILABLE = 'n/a';

/** 0.61 -> "61.0%"; null -> "n/a". */
export function formatPercent(rate: number | null, digits = 1): string {
  if (rate === null || !Number.isFinite(rate)) return NOT_AVAILABLE;
  return `${(rate * 100).toFixed(digits)}%`;
}

/** A change in proportion as signed percentage points without unit: 0.13 -> "+13.0", -0.021 -> "-2.1", 0 -> "0.0". */
export function formatSignedPoints(delta: number | null, digits = 1): string {
  if (delta === null || !Number.isFinite(delta)) return NOT_AVAILABLE;
  const magnitude = (Math.abs(delta) * 100).toFixed(digits);
  if (Number(magnitude) === 0) return magnitude;
  return `${delta < 0 ? '-' : '+'}${magnitude}`;
}

/** 0.13 -> "+13.0 pts". */
export function formatPoints(delta: number | null, digits = 1): string {
  const points = formatSignedPoints(delta, digits);
  return points === NOT_AVAILABLE ? points : `${points} pts`;
}

/** An interval of changes: "+7.1 to +18.9". */
export function formatPointsRange(interval: Interval, digits = 1): string {
  return `${formatSignedPoints(interval.lower, digits)} to ${formatSignedPoints(interval.upper, digits)}`;
}

/** 0.0023 -> "0.0023", 0.73 -> "0.73", 1 -> "1", below 0.0001 -> "< 0.0001". */
export function formatPValue(p: number): string {
  if (!Number.isFinite(p)) return NOT_AVAILABLE;
  if (p >= 1) return '1';
  if (p < 0.0001) return '< 0.0001';
  if (p >= 0.1) return p.toFixed(2);
  return p.toPrecision(2);
}

/** "p = 0.0023" or "p < 0.0001". */
export function formatPClause(p: number): string {
  const value = formatPValue(p);
  return value.startsWith('<') ? `p ${value}` : `p = ${value}`;
}

/** 10000 -> "10,000". */
export function formatCount(n: number): string {
  const digits = String(Math.trunc(Math.abs(n)));
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return n < 0 ? `-${grouped}` : grouped;
}
