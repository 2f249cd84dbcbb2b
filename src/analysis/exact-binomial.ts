// Exact binomial probabilities at p = 1/2, accurate for large n (Loader's saddle-point method).

const LN_2PI = 1.8378770664093456;
const LN_SQRT_2PI = 0.9189385332046728;
/** R's `binom.test` counts a point as "as extreme" when its probability is within this factor. */
const R_RELATIVE_TOLERANCE = 1 + 1e-7;

const SMALL_LOG_FACTORIALS: readonly number[] = (() => {
  const out = [0];
  let f = 1;
  for (let i = 1; i <= 15; i++) {
    f *= i;
    out.push(Math.log(f));
  }
  return out;
})();

/** log(n!) - log(sqrt(2 pi n) (n/e)^n), the error of Stirling's formula, for integer n >= 1. */
function stirlingError(n: number): number {
  if (n <= 15) return SMALL_LOG_FACTORIALS[n]! - (n + 0.5) * Math.log(n) + n - LN_SQRT_2PI;
  const nn = n * n;
  const s0 = 1 / 12;
  const s1 = 1 / 360;
  const s2 = 1 / 1260;
  const s3 = 1 / 1680;
  const s4 = 1 / 1188;
  if (n > 500) return (s0 - s1 / nn) / n;
  if (n > 80) return (s0 - (s1 - s2 / nn) / nn) / n;
  if (n > 35) return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n;
  return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n;
}

/** x log(x / np) + np - x, computed without cancellation when x is close to np. */
function deviance(x: number, np: number): number {
  if (Math.abs(x - np) < 0.1 * (x + np)) {
    let v = (x - np) / (x + np);
    let s = (x - np) * v;
    let ej = 2 * x * v;
    v *= v;
    for (let j = 1; j < 1000; j++) {
      ej *= v;
      const next = s + ej / (2 * j + 1);
      if (next === s) return next;
      s = next;
    }
    return s;
  }
  return x * Math.log(x / np) + np - x;
}

/** P(X = x) for X ~ Binomial(n, 1/2). */
export function binomialHalfProbability(x: number, n: number): number {
  if (x < 0 || x > n) return 0;
  if (x === 0 || x === n) return Math.pow(2, -n);
  const half = n / 2;
  const lc = stirlingError(n) - stirlingError(x) - stirlingError(n - x) - deviance(x, half) - deviance(n - x, half);
  const lf = LN_2PI + Math.log(x) + Math.log1p(-x / n);
  return Math.exp(lc - 0.5 * lf);
}

/** P(X <= k) for X ~ Binomial(n, 1/2) and k < n/2, summed downwards from P(X = k). */
function lowerTail(k: number, n: number, pk: number): number {
  let term = pk;
  let sum = 0;
  for (let i = k; i >= 0; i--) {
    sum += term;
    if (term < sum * 1e-18) break;
    term *= i / (n - i + 1);
  }
  return sum;
}

/**
 * Two-sided exact binomial test of x successes in n trials against p = 1/2, as R's
 * `binom.test(x, n, 0.5)$p.value` computes it: the total probability of every outcome no more
 * likely than the observed one (within a relative tolerance of 1e-7), capped at 1.
 * Returns 1 when n = 0.
 */
export function binomialTestHalf(x: number, n: number): number {
  if (n === 0) return 1;
  const m = n / 2;
  if (x === m) return 1;
  const k = Math.min(x, n - x);
  const pk = binomialHalfProbability(k, n);
  let p = 2 * lowerTail(k, n, pk);
  // Outcomes between k and the mode that are within R's tolerance of P(X = k); only possible for n > 2e7.
  const threshold = pk * R_RELATIVE_TOLERANCE;
  let term = pk;
  for (let i = k + 1; i <= Math.floor(m); i++) {
    term *= (n - i + 1) / i;
    if (term > threshold) break;
    p += term;
  }
  return Math.min(1, p);
}
