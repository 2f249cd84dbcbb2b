// Interval estimates and tests for proportions from paired binary outcomes.

import { binomialTestHalf } from './exact-binomial.js';

export interface Interval {
  lower: number;
  upper: number;
}

/** Two-sided significance level used throughout; intervals are at 1 - ALPHA. */
export const ALPHA = 0.05;
/** Power at which the minimum detectable change is computed. */
export const POWER = 0.8;
/** qnorm(1 - ALPHA / 2). */
export const Z_ALPHA = 1.959963984540054;
/** qnorm(POWER). */
export const Z_POWER = 0.8416212335729143;

/**
 * Wilson score interval (no continuity correction) for `successes` out of `total`, at 95%.
 * With no observations it is the whole range [0, 1].
 */
export function wilsonInterval(successes: number, total: number): Interval {
  if (total === 0) return { lower: 0, upper: 1 };
  const p = successes / total;
  const z2 = Z_ALPHA * Z_ALPHA;
  const z22n = z2 / (2 * total);
  const denominator = 1 + 2 * z22n;
  const spread = Z_ALPHA * Math.sqrt((p * (1 - p)) / total + z22n / (2 * total));
  return {
    lower: successes === 0 ? 0 : Math.max(0, (p + z22n - spread) / denominator),
    upper: successes === total ? 1 : Math.min(1, (p + z22n + spread) / denominator),
  };
}

/** Counts of a paired 2x2 table: before (rows) against after (columns). */
export interface PairCounts {
  /** Wrong before, right after. */
  fixed: number;
  /** Right before, wrong after. */
  broken: number;
  bothRight: number;
  bothWrong: number;
}

/**
 * 95% interval for the paired difference in proportions, after minus before, by Newcombe's
 * method 10 (Newcombe 1998, Stat Med 17:2635, the hybrid score or "square-and-add" interval).
 *
 * With p1 = after accuracy, p2 = before accuracy and Wilson limits (l1, u1), (l2, u2):
 *   lower = D - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
 *   upper = D + sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2)
 * where D = (fixed - broken) / n and phi is the correlation of the two outcomes with the paper's
 * correction: with A = bothRight * bothWrong - fixed * broken and the four margins' product M,
 * phi = (A - n/2) / sqrt(M) if A > n/2, 0 if 0 <= A <= n/2, A / sqrt(M) if A < 0, and 0 if any
 * margin is 0. With no pairs the interval is [-1, 1].
 */
export function newcombePairedInterval(counts: PairCounts): Interval {
  const { fixed, broken, bothRight, bothWrong } = counts;
  const n = fixed + broken + bothRight + bothWrong;
  if (n === 0) return { lower: -1, upper: 1 };
  const afterRight = bothRight + fixed;
  const beforeRight = bothRight + broken;
  const p1 = afterRight / n;
  const p2 = beforeRight / n;
  const difference = (fixed - broken) / n;
  const w1 = wilsonInterval(afterRight, n);
  const w2 = wilsonInterval(beforeRight, n);

  let phi = 0;
  const marginProduct = afterRight * (n - afterRight) * beforeRight * (n - beforeRight);
  if (marginProduct > 0) {
    const a = bothRight * bothWrong - fixed * broken;
    if (a > n / 2) phi = (a - n / 2) / Math.sqrt(marginProduct);
    else if (a < 0) phi = a / Math.sqrt(marginProduct);
  }

  const dl1 = p1 - w1.lower;
  const du1 = w1.upper - p1;
  const dl2 = p2 - w2.lower;
  const du2 = w2.upper - p2;
  const down = Math.sqrt(Math.max(0, dl1 * dl1 - 2 * phi * dl1 * du2 + du2 * du2));
  const up = Math.sqrt(Math.max(0, dl2 * dl2 - 2 * phi * dl2 * du1 + du1 * du1));
  return { lower: Math.max(-1, difference - down), upper: Math.min(1, difference + up) };
}

/**
 * Exact McNemar test: two-sided binomial test of `fixed` against `fixed + broken` at p = 1/2,
 * with R's `binom.test` p-value. 1 when there are no discordant pairs.
 */
export function mcnemarExactPValue(fixed: number, broken: number): number {
  return binomialTestHalf(fixed, fixed + broken);
}

export interface DetectableChange {
  /** Smallest |after - before| accuracy change detected with 80% power; null if no change of any size would be. */
  value: number | null;
  /** The discordance rate the formula used. */
  assumedDiscordance: number;
  /** 'observed' or, when the observed discordance is too small to allow the change, 'minimum_for_change'. */
  discordanceSource: 'observed' | 'minimum_for_change';
}

/**
 * Smallest paired change in accuracy that an exact-McNemar-style test at two-sided ALPHA would detect
 * with POWER, from the normal approximation for paired proportions (Connor 1987):
 *
 *   n = (Z_ALPHA sqrt(psi) + Z_POWER sqrt(psi - delta^2))^2 / delta^2
 *
 * solved for delta with n questions and discordance rate psi (share of questions whose outcome
 * differs). A change delta needs psi >= |delta|, so psi is max(observed discordance, delta): when the
 * observed discordance is 0, or too small for the change, the formula assumes every changed question
 * moved in the same direction (psi = delta), the most favourable case, so the figure is a floor.
 * Null when n < 4 or the answer would exceed 1.
 */
export function minimumDetectableChange(n: number, discordant: number): DetectableChange {
  const observed = n > 0 ? discordant / n : 0;
  const za = Z_ALPHA;
  const zb = Z_POWER;
  const room = n + zb * zb - za * za;
  if (n <= 0 || room < 0) return { value: null, assumedDiscordance: observed, discordanceSource: 'observed' };

  if (observed > 0) {
    const root = Math.sqrt(observed);
    const delta = (za * root * Math.sqrt(n) + zb * root * Math.sqrt(room)) / (n + zb * zb);
    if (delta <= observed) return { value: delta, assumedDiscordance: observed, discordanceSource: 'observed' };
  }

  const s = (za * Math.sqrt(n) + zb * Math.sqrt(room)) / (n + zb * zb);
  const delta = s * s;
  return {
    value: delta <= 1 ? delta : null,
    assumedDiscordance: Math.min(1, delta),
    discordanceSource: 'minimum_for_change',
  };
}
