// Property tests of the simulated model: determinism, rerun noise near the configured rate, memorization vs held-out.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BASE_MODELS, BENCHMARKS, findBenchmark, questionAt, questionIndex } from '@verdict/platform/sandbox/catalogue';
import {
  memorizationProbability,
  perRunFlipProbability,
  splitFailures,
  summarizeRun,
  type ModelLineage,
} from '@verdict/platform/sandbox/simulator';

const large = findBenchmark('305')!;
const b104 = findBenchmark('104')!;
const graded = findBenchmark('212')!;

function base(id: string): ModelLineage {
  const model = BASE_MODELS.find((m) => m.id === id)!;
  return { kind: 'base', id: model.id, ability: model.ability };
}

const seedArb = fc.integer({ min: 0, max: 2 ** 31 - 1 });
const modelArb = fc.constantFrom(...BASE_MODELS.map((m) => m.id));

function fineTune(
  parent: ModelLineage,
  trained: readonly string[],
  options: { augmentation?: number; forgetting?: number; generalization?: number; id?: string } = {},
): ModelLineage {
  return {
    kind: 'fine_tuned',
    id: options.id ?? `ft/${parent.id}-x`,
    parent,
    trainedQuestionIds: new Set(trained),
    memorization: memorizationProbability(options.augmentation ?? 5),
    forgetting: options.forgetting ?? 0.025,
    generalization: options.generalization ?? 0,
  };
}

describe('simulator', () => {
  it('same seed, same questions and same results', () => {
    fc.assert(
      fc.property(seedArb, modelArb, fc.constantFrom(...BENCHMARKS), (seed, modelId, benchmark) => {
        const noise = { runId: 'run_1001', rerunFlipRate: 0.03 };
        const a = summarizeRun(seed, benchmark, base(modelId), noise);
        const b = summarizeRun(seed, benchmark, base(modelId), noise);
        expect(b).toEqual(a);
        expect(questionAt(seed, benchmark, 7)).toEqual(questionAt(seed, benchmark, 7));
      }),
      { numRuns: 15 },
    );
  });

  it('question ids round-trip and every benchmark has its advertised size', () => {
    for (const benchmark of BENCHMARKS) {
      const last = questionAt(1, benchmark, benchmark.questionCount - 1);
      expect(questionIndex(benchmark, last.id)).toBe(benchmark.questionCount - 1);
      expect(questionIndex(benchmark, `${benchmark.id}-0000`)).toBeNull();
    }
  });

  it('benchmark 410 has 100,000 questions with ids in question order, and the base model fails over 10,000 of them', () => {
    const huge = findBenchmark('410')!;
    expect(huge.questionCount).toBe(100_000);
    expect(questionAt(104, huge, 0).id).toBe('410-000001');
    expect(questionAt(104, huge, 99_999).id).toBe('410-100000');
    expect(questionIndex(huge, '410-100000')).toBe(99_999);
    expect(questionIndex(huge, '410-100001')).toBeNull();
    const run = summarizeRun(104, huge, base('qwen/Qwen2.5-0.5B-Instruct'), { runId: 'run_1001', rerunFlipRate: 0.03 });
    expect(run.failedQuestionIds.length).toBeGreaterThan(10_000);
    expect(run.failedQuestionIds.length).toBeLessThan(20_000);
    expect([...run.failedQuestionIds].sort()).toEqual(run.failedQuestionIds);
  });

  it('a rerun of the same model differs on about the configured share of questions', () => {
    fc.assert(
      fc.property(seedArb, modelArb, fc.double({ min: 0.01, max: 0.1, noNaN: true }), (seed, modelId, rate) => {
        const lineage = base(modelId);
        const first = summarizeRun(seed, large, lineage, { runId: 'run_1', rerunFlipRate: rate });
        const second = summarizeRun(seed, large, lineage, { runId: 'run_2', rerunFlipRate: rate });
        const differ = first.scores.filter((s, i) => s !== second.scores[i]).length / large.questionCount;
        expect(Math.abs(differ - rate)).toBeLessThan(0.025);
      }),
      { numRuns: 20 },
    );
  });

  it('per-run flip probability reproduces the rerun rate', () => {
    for (const rate of [0, 0.01, 0.03, 0.2]) {
      const q = perRunFlipProbability(rate);
      expect(2 * q * (1 - q)).toBeCloseTo(rate, 10);
    }
  });

  it('training fixes far more trained-on failures than held-out ones, and breaks a few right answers', () => {
    fc.assert(
      fc.property(seedArb, modelArb, fc.integer({ min: 3, max: 20 }), (seed, modelId, augmentation) => {
        const parent = base(modelId);
        const before = summarizeRun(seed, large, parent, { runId: 'run_1', rerunFlipRate: 0.03 });
        const split = splitFailures(before.failedQuestionIds, 0.3, seed, 'run_1');
        const tuned = fineTune(parent, split.trained, { augmentation });
        const after = summarizeRun(seed, large, tuned, { runId: 'run_2', rerunFlipRate: 0.03 });
        const failedAfter = new Set(after.failedQuestionIds);
        const fixRate = (ids: string[]) => ids.filter((id) => !failedAfter.has(id)).length / ids.length;
        const trainedFix = fixRate(split.trained);
        const heldOutFix = fixRate(split.heldOut);
        expect(trainedFix).toBeGreaterThan(memorizationProbability(augmentation) - 0.1);
        expect(heldOutFix).toBeLessThan(0.15);
        expect(trainedFix - heldOutFix).toBeGreaterThan(0.5);
        const failedBefore = new Set(before.failedQuestionIds);
        const right = after.scores.map((_, i) => questionAt(seed, large, i).id).filter((id) => !failedBefore.has(id));
        const broken = right.filter((id) => failedAfter.has(id)).length / right.length;
        expect(broken).toBeGreaterThan(0.01);
        expect(broken).toBeLessThan(0.1);
      }),
      { numRuns: 12 },
    );
  });

  it('memorization rises with augmentation', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 19 }), (a) => {
        expect(memorizationProbability(a + 1)).toBeGreaterThan(memorizationProbability(a));
      }),
    );
    expect(memorizationProbability(5)).toBeCloseTo(1 - 0.5 ** (5 / 1.5), 10);
  });

  it('a configured true effect moves untrained questions', () => {
    const parent = base('qwen/Qwen2.5-0.5B-Instruct');
    const before = summarizeRun(3, large, parent, { runId: 'r1', rerunFlipRate: 0 });
    const none = summarizeRun(3, large, fineTune(parent, [], { generalization: 0, forgetting: 0 }), { runId: 'r2', rerunFlipRate: 0 });
    const some = summarizeRun(3, large, fineTune(parent, [], { generalization: 0.2, forgetting: 0 }), { runId: 'r2', rerunFlipRate: 0 });
    expect(none.score).toBe(before.score);
    const gained = some.score - before.score;
    const expected = 0.2 * (1 - before.score);
    expect(Math.abs(gained - expected)).toBeLessThan(0.03);
  });

  it('splitFailures partitions the failures deterministically', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 99 }), { maxLength: 100 }),
        fc.double({ min: 0, max: 0.9, noNaN: true }),
        seedArb,
        (indices, fraction, seed) => {
          const failed = indices.sort((a, b) => a - b).map((i) => `104-${String(i + 1).padStart(4, '0')}`);
          const split = splitFailures(failed, fraction, seed, 'run_7');
          expect(split).toEqual(splitFailures(failed, fraction, seed, 'run_7'));
          expect(split.heldOut).toHaveLength(Math.round(fraction * failed.length));
          expect([...split.trained, ...split.heldOut].sort()).toEqual([...failed].sort());
          expect(split.trained.filter((id) => split.heldOut.includes(id))).toEqual([]);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('graded scores stay in 0..1 and respond to training the same way', () => {
    fc.assert(
      fc.property(seedArb, modelArb, (seed, modelId) => {
        const parent = base(modelId);
        const before = summarizeRun(seed, graded, parent, { runId: 'g1', rerunFlipRate: 0.03 });
        expect(before.scores.every((s) => s >= 0 && s <= 1)).toBe(true);
        if (before.failedQuestionIds.length === 0) return;
        const tuned = fineTune(parent, before.failedQuestionIds, { augmentation: 10 });
        const after = summarizeRun(seed, graded, tuned, { runId: 'g2', rerunFlipRate: 0.03 });
        const stillFailed = before.failedQuestionIds.filter((id) => after.failedQuestionIds.includes(id)).length;
        expect(stillFailed / before.failedQuestionIds.length).toBeLessThan(0.3);
      }),
      { numRuns: 15 },
    );
  });

  it('a bigger model scores higher than a smaller one on benchmark 104 on average', () => {
    const mean = (id: string) => {
      let total = 0;
      for (let seed = 0; seed < 20; seed++) total += summarizeRun(seed, b104, base(id), { runId: 'r', rerunFlipRate: 0.03 }).score;
      return total / 20;
    };
    expect(mean('qwen/Qwen2.5-7B-Instruct')).toBeGreaterThan(mean('qwen/Qwen2.5-1.5B-Instruct'));
    expect(mean('qwen/Qwen2.5-1.5B-Instruct')).toBeGreaterThan(mean('qwen/Qwen2.5-0.5B-Instruct'));
  });
});
