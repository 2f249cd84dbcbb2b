// Turns the counts and score sums of one set of joined questions into its reported figures.

import { bootstrapMeanInterval } from './bootstrap.js';
import {
  Z_ALPHA,
  Z_POWER,
  mcnemarExactPValue,
  minimumDetectableChange,
  newcombePairedInterval,
  wilsonInterval,
  type PairCounts,
} from './paired-statistics.js';
import type { GradedFigures, PairedFigures, Proportion } from './types.js';

/** Per-question score sums for one set; `differences` holds after - before when a bootstrap is wanted. */
export interface GradedSums {
  sumBefore: number;
  sumAfter: number;
  sumChange: number;
  sumChangeSquared: number;
  up: number;
  down: number;
  differences: Float64Array | null;
}

export interface BootstrapSettings {
  resamples: number;
  seed: number;
}

export function emptyGradedSums(): GradedSums {
  return { sumBefore: 0, sumAfter: 0, sumChange: 0, sumChangeSquared: 0, up: 0, down: 0, differences: null };
}

export function proportion(count: number, total: number): Proportion {
  return { count, total, rate: total > 0 ? count / total : null, interval: wilsonInterval(count, total) };
}

export function pairedFigures(
  table: PairCounts,
  graded: GradedSums | null,
  bootstrap: BootstrapSettings | null,
): PairedFigures {
  const { fixed, broken, bothRight, bothWrong } = table;
  const n = fixed + broken + bothRight + bothWrong;
  return {
    questions: n,
    table: { fixed, broken, bothRight, bothWrong },
    accuracyBefore: proportion(bothRight + broken, n),
    accuracyAfter: proportion(bothRight + fixed, n),
    change: { estimate: n > 0 ? (fixed - broken) / n : null, interval: newcombePairedInterval(table) },
    mcnemarP: mcnemarExactPValue(fixed, broken),
    discordanceRate: n > 0 ? (fixed + broken) / n : null,
    detectableChange: minimumDetectableChange(n, fixed + broken),
    graded: graded ? gradedFigures(n, graded, bootstrap) : null,
  };
}

function gradedFigures(n: number, sums: GradedSums, bootstrap: BootstrapSettings | null): GradedFigures {
  if (n === 0) {
    return {
      meanBefore: null,
      meanAfter: null,
      meanChange: null,
      interval: sums.differences && bootstrap ? { lower: -1, upper: 1 } : null,
      questionsUp: 0,
      questionsDown: 0,
      detectableChange: null,
    };
  }
  const meanChange = sums.sumChange / n;
  let detectableChange: number | null = null;
  if (n >= 2) {
    const variance = Math.max(0, (sums.sumChangeSquared - sums.sumChange * meanChange) / (n - 1));
    detectableChange =
      variance > 0
        ? Math.min(1, ((Z_ALPHA + Z_POWER) * Math.sqrt(variance)) / Math.sqrt(n))
        : minimumDetectableChange(n, 0).value;
  }
  const interval =
    sums.differences && bootstrap
      ? bootstrapMeanInterval(sums.differences.subarray(0, n), bootstrap.resamples, bootstrap.seed)
      : null;
  return {
    meanBefore: sums.sumBefore / n,
    meanAfter: sums.sumAfter / n,
    meanChange,
    interval,
    questionsUp: sums.up,
    questionsDown: sums.down,
    detectableChange,
  };
}
