// Property tests: symmetry under swapping the runs, and well-defined figures for any input.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALPHA, compareRuns, formatPercent, formatPointsRange, type Comparison, type QuestionOutcome } from '../../src/analysis/index.js';
import {
  mcnemarExactPValue,
  minimumDetectableChange,
  newcombePairedInterval,
  wilsonInterval,
} from '../../src/analysis/paired-statistics.js';
import { numbersIn } from './helpers.js';

interface Question {
  before: boolean;
  after: boolean;
  rerun: boolean;
  beforeScore: number;
  afterScore: number;
  category: string;
  presence: 'both' | 'before' | 'after';
  training: 'trained' | 'held' | 'neither';
}

const question = fc.record<Question>({
  before: fc.boolean(),
  after: fc.boolean(),
  rerun: fc.boolean(),
  beforeScore: fc.double({ min: 0, max: 1, noNaN: true }),
  afterScore: fc.double({ min: 0, max: 1, noNaN: true }),
  category: fc.constantFrom('math', 'code', 'reading'),
  presence: fc.constantFrom('both', 'both', 'both', 'both', 'before', 'after'),
  training: fc.constantFrom('trained', 'held', 'neither'),
});

const questions = fc.array(question, { maxLength: 120 });

function build(qs: Question[], graded: boolean) {
  const before: QuestionOutcome[] = [];
  const after: QuestionOutcome[] = [];
  const rerun: QuestionOutcome[] = [];
  qs.forEach((q, i) => {
    const questionId = `q${i}`;
    const b = graded ? { score: q.beforeScore } : { correct: q.before };
    const a = graded ? { score: q.afterScore } : { correct: q.after };
    if (q.presence !== 'after') before.push({ questionId, category: q.category, ...b });
    if (q.presence !== 'before') after.push({ questionId, category: q.category, ...a });
    if (i % 3 !== 0) rerun.push({ questionId, category: q.category, correct: q.rerun });
  });
  const trainedOn = qs.flatMap((q, i) => (q.training === 'trained' ? [`q${i}`] : []));
  const heldOut = qs.flatMap((q, i) => (q.training === 'held' ? [`q${i}`] : []));
  return { before, after, rerun, trainedOn, heldOut };
}

function expectSane(c: Comparison): void {
  for (const [path, value] of numbersIn(c)) {
    if (!Number.isFinite(value)) throw new Error(`${path} is ${value}`);
  }
  expect(JSON.parse(JSON.stringify(c))).toEqual(c);
  expect(c.verdict.reason).toMatch(/^[A-Z][^\n]*\.$/);
  expect(c.verdict.reason).not.toMatch(/\.\s+[A-Z]/);
  const figures = [c.overall, ...c.categories];
  if (c.training) figures.push(c.training.trainedOn, c.training.notTrainedOn, ...(c.training.heldOut ? [c.training.heldOut] : []));
  for (const f of figures) {
    expect(f.mcnemarP).toBeGreaterThanOrEqual(0);
    expect(f.mcnemarP).toBeLessThanOrEqual(1);
    const { lower, upper } = f.change.interval;
    expect(lower).toBeGreaterThanOrEqual(-1);
    expect(upper).toBeLessThanOrEqual(1);
    expect(lower).toBeLessThanOrEqual(upper);
    if (f.change.estimate !== null) {
      expect(lower).toBeLessThanOrEqual(f.change.estimate + 1e-12);
      expect(upper).toBeGreaterThanOrEqual(f.change.estimate - 1e-12);
    }
    for (const p of [f.accuracyBefore, f.accuracyAfter]) {
      expect(p.interval.lower).toBeGreaterThanOrEqual(0);
      expect(p.interval.upper).toBeLessThanOrEqual(1);
      if (p.rate !== null) {
        expect(p.interval.lower).toBeLessThanOrEqual(p.rate + 1e-12);
        expect(p.interval.upper).toBeGreaterThanOrEqual(p.rate - 1e-12);
      }
    }
  }
}

describe('properties of compareRuns', () => {
  it('is well defined for any input, with or without training ids and a rerun', () => {
    fc.assert(
      fc.property(questions, fc.boolean(), (qs, withExtras) => {
        const { before, after, rerun, trainedOn, heldOut } = build(qs, false);
        const c = compareRuns(withExtras ? { before, after, trainedOn, heldOut, baselineRerun: rerun } : { before, after });
        expectSane(c);
        const t = c.overall.table;
        expect(t.fixed + t.broken + t.bothRight + t.bothWrong).toBe(c.coverage.joined);
        expect(c.coverage.joined + c.coverage.onlyBefore.count).toBe(before.length);
        expect(c.coverage.joined + c.coverage.onlyAfter.count).toBe(after.length);
        expect(c.categories.reduce((sum, x) => sum + x.questions, 0)).toBe(c.overall.questions);
        if (c.training) {
          expect(c.training.trainedOn.questions + c.training.notTrainedOn.questions).toBe(c.overall.questions);
          if (!c.training.generalizationMeasured) expect(c.verdict.outcome).not.toBe('improved');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives every outcome a headline that names it and states the figures it was decided on', () => {
    fc.assert(
      fc.property(questions, fc.boolean(), fc.boolean(), (qs, withTraining, withRerun) => {
        const { before, after, rerun, trainedOn, heldOut } = build(qs, false);
        const c = compareRuns({ before, after, ...(withTraining ? { trainedOn, heldOut } : {}), ...(withRerun ? { baselineRerun: rerun } : {}) });
        const { headline, outcome } = c.verdict;
        expect(headline).not.toMatch(/_|\n/);
        if (c.coverage.joined === 0) {
          expect(headline).toMatch(/^Nothing to compare: /);
          return;
        }
        const word = { improved: 'Improved', regressed: 'Regressed', no_detectable_change: 'No detectable change', memorized: 'Memorized' }[outcome];
        expect(headline.startsWith(`${word}:`) || headline.startsWith(`${word} beyond the trained questions:`)).toBe(true);
        const o = c.overall;
        const t = c.training;
        if (!t) {
          expect(headline).toContain(`${formatPercent(o.accuracyBefore.rate)} → ${formatPercent(o.accuracyAfter.rate)}`);
          expect(headline).toContain(formatPointsRange(o.change.interval));
          // "No detectable change" only where the table's interval includes 0 or the test is not significant.
          const clear = o.mcnemarP < ALPHA && (o.change.interval.lower > 0 || o.change.interval.upper < 0);
          expect(outcome === 'no_detectable_change').toBe(!clear);
        } else if (t.generalization) {
          expect(headline).toContain(formatPointsRange(t.generalization.interval));
        } else if (!t.generalizationMeasured && t.trainedOn.questions > 0) {
          // Memorization only: never "no detectable change" above a table that shows the trained questions' gain.
          expect(['memorized', 'regressed']).toContain(outcome);
          if (outcome === 'memorized') expect(headline).toContain(`${t.trainedOn.accuracyAfter.count} of ${t.trainedOn.questions} trained`);
          expect(headline).toContain('generalization not measured');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('negates the change and swaps fixed and broken when the runs are swapped', () => {
    fc.assert(
      fc.property(questions, (qs) => {
        const { before, after } = build(qs, false);
        const forward = compareRuns({ before, after });
        const backward = compareRuns({ before: after, after: before });
        const f = forward.overall;
        const b = backward.overall;
        expect(b.table).toEqual({ fixed: f.table.broken, broken: f.table.fixed, bothRight: f.table.bothRight, bothWrong: f.table.bothWrong });
        expect(b.accuracyBefore).toEqual(f.accuracyAfter);
        expect(b.accuracyAfter).toEqual(f.accuracyBefore);
        if (f.change.estimate === null) expect(b.change.estimate).toBeNull();
        else expect(b.change.estimate).toBeCloseTo(-f.change.estimate, 14);
        expect(b.change.interval.lower).toBeCloseTo(-f.change.interval.upper, 12);
        expect(b.change.interval.upper).toBeCloseTo(-f.change.interval.lower, 12);
        expect(b.mcnemarP).toBe(f.mcnemarP);
        expect(backward.coverage.onlyBefore).toEqual(forward.coverage.onlyAfter);
        const flipped = { improved: 'regressed', regressed: 'improved', no_detectable_change: 'no_detectable_change', memorized: 'memorized' };
        expect(backward.verdict.outcome).toBe(flipped[forward.verdict.outcome]);
      }),
      { numRuns: 300 },
    );
  });

  it('negates the graded mean change and mirrors its bootstrap interval when the runs are swapped', () => {
    fc.assert(
      fc.property(fc.array(question, { maxLength: 60 }), (qs) => {
        const { before, after } = build(qs, true);
        const options = { scoring: 'graded' as const, bootstrap: { resamples: 200, seed: 5 } };
        const forward = compareRuns({ before, after, ...options });
        const backward = compareRuns({ before: after, after: before, ...options });
        expectSane(forward);
        const f = forward.overall.graded!;
        const b = backward.overall.graded!;
        if (f.meanChange === null) expect(b.meanChange).toBeNull();
        else expect(b.meanChange).toBeCloseTo(-f.meanChange, 12);
        expect(b.interval!.lower).toBeCloseTo(-f.interval!.upper, 12);
        expect(b.interval!.upper).toBeCloseTo(-f.interval!.lower, 12);
        expect(b.questionsUp).toBe(f.questionsDown);
      }),
      { numRuns: 150 },
    );
  });
});

describe('properties of the statistics', () => {
  const count = fc.integer({ min: 0, max: 5000 });

  it('McNemar p is symmetric in fixed and broken and lies in [0, 1]', () => {
    fc.assert(
      fc.property(count, count, (fixed, broken) => {
        const p = mcnemarExactPValue(fixed, broken);
        expect(p).toBeGreaterThanOrEqual(0);
        expect(p).toBeLessThanOrEqual(1);
        expect(mcnemarExactPValue(broken, fixed)).toBe(p);
      }),
    );
  });

  it("Newcombe's interval contains the estimate and stays in [-1, 1]", () => {
    fc.assert(
      fc.property(count, count, count, count, (bothRight, fixed, broken, bothWrong) => {
        const n = bothRight + fixed + broken + bothWrong;
        const { lower, upper } = newcombePairedInterval({ bothRight, fixed, broken, bothWrong });
        expect(lower).toBeGreaterThanOrEqual(-1);
        expect(upper).toBeLessThanOrEqual(1);
        if (n > 0) {
          const d = (fixed - broken) / n;
          expect(lower).toBeLessThanOrEqual(d + 1e-12);
          expect(upper).toBeGreaterThanOrEqual(d - 1e-12);
        }
      }),
    );
  });

  it('Wilson intervals contain the rate', () => {
    fc.assert(
      fc.property(count, count, (a, b) => {
        const { lower, upper } = wilsonInterval(a, a + b);
        if (a + b === 0) return;
        expect(lower).toBeLessThanOrEqual(a / (a + b) + 1e-12);
        expect(upper).toBeGreaterThanOrEqual(a / (a + b) - 1e-12);
      }),
    );
  });

  it('the minimum detectable change exists from four questions, is at most 1 and shrinks with more questions', () => {
    fc.assert(
      fc.property(fc.integer({ min: 4, max: 2_000_000 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, rate) => {
        const discordant = Math.round(rate * n);
        const small = minimumDetectableChange(n, discordant);
        expect(small.value).not.toBeNull();
        expect(small.value!).toBeGreaterThan(0);
        expect(small.value!).toBeLessThanOrEqual(1);
        const larger = minimumDetectableChange(4 * n, 4 * discordant);
        expect(larger.value!).toBeLessThan(small.value!);
      }),
    );
    expect(minimumDetectableChange(3, 3).value).toBeNull();
    expect(minimumDetectableChange(0, 0).value).toBeNull();
  });
});
