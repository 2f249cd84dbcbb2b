// compareRuns: the join, the figures, the training split, the noise floor, the verdict and its edge cases.
import { describe, expect, it } from 'vitest';
import { AnalysisError, compareRuns, type CompareInput, type QuestionOutcome } from '../../src/analysis/index.js';
import { combine, idsWhere, numbersIn, runsWith } from './helpers.js';
import { wilsonInterval } from '../../src/analysis/paired-statistics.js';
import { formatPercent, formatPointsRange } from '../../src/analysis/format.js';

function expectAnalysisError(input: CompareInput, code: AnalysisError['code']): void {
  let thrown: unknown;
  try {
    compareRuns(input);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(AnalysisError);
  expect((thrown as AnalysisError).code).toBe(code);
}

function expectWellFormed(input: CompareInput): void {
  const comparison = compareRuns(input);
  for (const [path, value] of numbersIn(comparison)) {
    if (!Number.isFinite(value)) throw new Error(`${path} is ${value}`);
  }
  expect(JSON.parse(JSON.stringify(comparison))).toEqual(comparison);
  expect(comparison.verdict.reason).toMatch(/^[A-Z].*\.$/);
  expect(comparison.verdict.reason).not.toMatch(/\.\s+[A-Z]/);
}

describe('the paired table and verdict', () => {
  it('reports a clear improvement with every figure in one sentence', () => {
    const c = compareRuns(runsWith({ bothRight: 59, fixed: 15, broken: 2, bothWrong: 24 }));
    expect(c.overall.table).toEqual({ fixed: 15, broken: 2, bothRight: 59, bothWrong: 24 });
    expect(c.overall.accuracyBefore.rate).toBeCloseTo(0.61, 12);
    expect(c.overall.accuracyAfter.rate).toBeCloseTo(0.74, 12);
    expect(c.overall.change.estimate).toBeCloseTo(0.13, 12);
    expect(c.overall.mcnemarP).toBeCloseTo(0.0023498535156250022, 15);
    expect(c.verdict.outcome).toBe('improved');
    expect(c.verdict.basis).toBe('all_questions');
    expect(c.verdict.generalizationMeasured).toBeNull();
    expect(c.verdict.reason).toBe(
      'Accuracy rose from 61.0% to 74.0% (+13.0 pts, 95% CI +5.0 to +20.8); 15 questions fixed vs 2 broken, McNemar p = 0.0023.',
    );
    expect(c.verdict.headline).toBe('Improved: accuracy 61.0% → 74.0% (+13.0 pts, 95% CI +5.0 to +20.8)');
  });

  it('reports a regression', () => {
    const c = compareRuns(runsWith({ bothRight: 59, fixed: 2, broken: 15, bothWrong: 24 }));
    expect(c.verdict.outcome).toBe('regressed');
    expect(c.verdict.reason).toMatch(/^Accuracy fell from 74\.0% to 61\.0% \(-13\.0 pts, 95% CI -20\.8 to -5\.0\)/);
    expect(c.verdict.headline).toBe('Regressed: accuracy 74.0% → 61.0% (-13.0 pts, 95% CI -20.8 to -5.0)');
  });

  it('says how large a change would have shown when none is detected', () => {
    const c = compareRuns(runsWith({ bothRight: 59, fixed: 5, broken: 3, bothWrong: 33 }));
    expect(c.verdict.outcome).toBe('no_detectable_change');
    expect(c.overall.detectableChange.discordanceSource).toBe('observed');
    expect(c.verdict.reason).toBe(
      'Accuracy rose from 62.0% to 64.0% (+2.0 pts, 95% CI -3.8 to +7.8), 5 questions fixed vs 3 broken, ' +
        'McNemar p = 0.73, so no change was detected; with 100 questions only a change of about 7.8 pts or more would reliably show.',
    );
    expect(c.verdict.headline).toBe('No detectable change: accuracy 62.0% → 64.0% (+2.0 pts, 95% CI -3.8 to +7.8)');
  });

  it('lists the first fixed and broken ids in ascending order', () => {
    const runs = runsWith({ bothRight: 3, fixed: 14, broken: 12, bothWrong: 1 });
    runs.after.reverse();
    const c = compareRuns(runs);
    expect(c.overall.topFixed).toEqual(idsWhere(runs, (b) => !b.correct).slice(0, 10));
    expect(c.overall.topFixed).toHaveLength(10);
    expect(c.overall.topBroken).toEqual([...c.overall.topBroken].sort());
    expect(c.overall.topBroken[0]).toBe('q0018');
  });

  it('gives the same comparison whatever the order of either run', () => {
    const runs = runsWith({ bothRight: 40, fixed: 9, broken: 4, bothWrong: 17 });
    const shuffled = { before: [...runs.before].reverse(), after: [...runs.after.slice(7), ...runs.after.slice(0, 7)] };
    const a = compareRuns(runs);
    const b = compareRuns(shuffled);
    expect(b).toEqual(a);
  });
});

describe('joining the runs', () => {
  it('counts and samples questions present in only one run instead of dropping them silently', () => {
    const shared = runsWith({ bothRight: 5, fixed: 2 });
    const onlyBefore = runsWith({ bothRight: 12 }, { prefix: 'b' }).before;
    const onlyAfter = runsWith({ bothWrong: 3 }, { prefix: 'a' }).after;
    const c = compareRuns({ before: [...onlyBefore, ...shared.before], after: [...shared.after, ...onlyAfter.reverse()] });
    expect(c.coverage).toEqual({
      before: 19,
      after: 10,
      joined: 7,
      onlyBefore: { count: 12, sampleIds: onlyBefore.slice(0, 10).map((q) => q.questionId) },
      onlyAfter: { count: 3, sampleIds: ['a0001', 'a0002', 'a0003'] },
    });
    expect(c.overall.questions).toBe(7);
  });

  it('takes each question category from the before run and breaks every figure down by category', () => {
    const math = runsWith({ bothRight: 4, fixed: 6, bothWrong: 2 }, { prefix: 'm', category: 'math' });
    const code = runsWith({ bothRight: 7, broken: 3, bothWrong: 1 }, { prefix: 'c', category: 'code' });
    const runs = combine(math, code);
    runs.after.forEach((q) => (q.category = 'renamed'));
    const c = compareRuns(runs);
    expect(c.categories.map((x) => x.category)).toEqual(['code', 'math']);
    const [codeFigures, mathFigures] = c.categories;
    expect(codeFigures!.table).toEqual({ fixed: 0, broken: 3, bothRight: 7, bothWrong: 1 });
    expect(mathFigures!.table).toEqual({ fixed: 6, broken: 0, bothRight: 4, bothWrong: 2 });
    expect(mathFigures!.mcnemarP).toBeCloseTo(0.03125, 15);
    expect(mathFigures!.change.interval.lower).toBeGreaterThan(0);
    expect(codeFigures!.accuracyBefore.rate).toBeCloseTo(10 / 11, 15);
  });

  it('rejects a duplicate id in any run with a coded error', () => {
    const runs = runsWith({ bothRight: 3, fixed: 1 });
    expectAnalysisError({ before: [...runs.before, runs.before[0]!], after: runs.after }, 'duplicate_question');
    expectAnalysisError({ before: runs.before, after: [...runs.after, runs.after[2]!] }, 'duplicate_question');
    const stray = { questionId: 'zz', category: 'x', correct: true };
    expectAnalysisError({ before: runs.before, after: [...runs.after, stray, stray] }, 'duplicate_question');
    expectAnalysisError({ ...runs, baselineRerun: [...runs.before, runs.before[1]!] }, 'duplicate_question');
    try {
      compareRuns({ before: [...runs.before, runs.before[0]!], after: runs.after });
    } catch (error) {
      expect((error as Error).message).toContain('q0001');
      expect((error as Error).message).toContain('before');
    }
  });

  it('detects duplicates when the runs are in different orders too', () => {
    const runs = runsWith({ bothRight: 3, fixed: 2 });
    const reversed = [...runs.after].reverse();
    expectAnalysisError({ before: [...runs.before, runs.before[0]!], after: reversed }, 'duplicate_question');
    expectAnalysisError({ before: runs.before, after: [...reversed, runs.after[0]!] }, 'duplicate_question');
  });

  it('tells apart different ids whose 32-bit hashes collide', () => {
    // 'q-439599' and 'q-622382' share a join hash.
    const before: QuestionOutcome[] = [
      { questionId: 'q-439599', category: 'x', correct: false },
      { questionId: 'q-622382', category: 'x', correct: true },
      { questionId: 'q-1', category: 'x', correct: true },
    ];
    const after: QuestionOutcome[] = [
      { questionId: 'q-1', category: 'x', correct: true },
      { questionId: 'q-622382', category: 'x', correct: false },
      { questionId: 'q-439599', category: 'x', correct: true },
    ];
    const c = compareRuns({ before, after });
    expect(c.overall.table).toEqual({ fixed: 1, broken: 1, bothRight: 1, bothWrong: 0 });
    expect(c.overall.topFixed).toEqual(['q-439599']);
    expect(c.overall.topBroken).toEqual(['q-622382']);
    const partial = compareRuns({ before, after: [after[1]!, { questionId: 'q-439599x', category: 'x', correct: true }] });
    expect(partial.coverage.joined).toBe(1);
    expectAnalysisError({ before: [...before, before[1]!], after: [] }, 'duplicate_question');
    expectAnalysisError({ before: [...before, before[1]!], after }, 'duplicate_question');
    expectAnalysisError({ before, after: [...after, after[2]!] }, 'duplicate_question');
  });

  it('rejects outcomes it cannot read and contradictory options', () => {
    const runs = runsWith({ bothRight: 2, fixed: 1 });
    const noOutcome: QuestionOutcome = { questionId: 'q0001', category: 'general' };
    expectAnalysisError({ before: [noOutcome], after: runs.after }, 'missing_outcome');
    const badScore: QuestionOutcome = { questionId: 'q0001', category: 'general', score: 1.5 };
    expectAnalysisError({ before: [badScore], after: runs.after, scoring: 'graded' }, 'invalid_score');
    expectAnalysisError({ before: [{ ...badScore, score: Number.NaN }], after: runs.after }, 'invalid_score');
    expectAnalysisError({ ...runs, trainedOn: ['q0001'], heldOut: ['q0001'] }, 'trained_and_held_out');
    expectAnalysisError({ ...runs, heldOut: ['q0001'] }, 'invalid_option');
    expectAnalysisError({ ...runs, scoring: 'graded', bootstrap: { resamples: 0 } }, 'invalid_option');
    expectAnalysisError({ ...runs, scoring: 'graded', bootstrap: { seed: 1.5 } }, 'invalid_option');
    expectAnalysisError({ ...runs, scoring: 'fuzzy' as never }, 'invalid_option');
  });

  it('reads correctness from a score of 1 when "correct" is absent', () => {
    const before: QuestionOutcome[] = [
      { questionId: 'a', category: 'x', score: 1 },
      { questionId: 'b', category: 'x', score: 0.9 },
    ];
    const after: QuestionOutcome[] = [
      { questionId: 'a', category: 'x', score: 0.5 },
      { questionId: 'b', category: 'x', correct: true },
    ];
    const c = compareRuns({ before, after });
    expect(c.overall.table).toEqual({ fixed: 1, broken: 1, bothRight: 0, bothWrong: 0 });
  });
});

describe('edge cases return well-defined results', () => {
  const cases: Array<[string, CompareInput]> = [
    ['empty runs', { before: [], after: [] }],
    ['a single question', runsWith({ fixed: 1 })],
    ['disjoint question sets', { before: runsWith({ bothRight: 4 }, { prefix: 'x' }).before, after: runsWith({ fixed: 3 }).after }],
    ['all fixed', runsWith({ fixed: 40 })],
    ['all broken', runsWith({ broken: 40 })],
    ['no discordant pairs', runsWith({ bothRight: 30, bothWrong: 10 })],
    ['everything right twice', runsWith({ bothRight: 25 })],
    ['graded, empty', { before: [], after: [], scoring: 'graded' }],
    ['graded, one question', { ...runsWith({ fixed: 1 }), scoring: 'graded' }],
    ['graded, nothing moved', { ...runsWith({ bothRight: 5, bothWrong: 5 }), scoring: 'graded' }],
    ['trained on everything', { ...runsWith({ fixed: 5, bothRight: 2 }), trainedOn: idsWhere(runsWith({ fixed: 5, bothRight: 2 }), () => true) }],
    ['trained on ids that are not in the runs', { ...runsWith({ fixed: 5 }), trainedOn: ['nope'] }],
    ['rerun with no overlap', { ...runsWith({ fixed: 5 }), baselineRerun: runsWith({ fixed: 2 }, { prefix: 'r' }).before }],
  ];

  it.each(cases)('%s', (_name, input) => {
    expectWellFormed(input);
  });

  it('says plainly when no question was in both runs', () => {
    const c = compareRuns({ before: runsWith({ bothRight: 4 }, { prefix: 'x' }).before, after: runsWith({ fixed: 3 }).after });
    expect(c.overall.questions).toBe(0);
    expect(c.overall.accuracyBefore).toEqual({ count: 0, total: 0, rate: null, interval: { lower: 0, upper: 1 } });
    expect(c.overall.change).toEqual({ estimate: null, interval: { lower: -1, upper: 1 } });
    expect(c.overall.mcnemarP).toBe(1);
    expect(c.verdict.outcome).toBe('no_detectable_change');
    expect(c.verdict.reason).toBe('No question appeared in both runs (4 only before, 3 only after), so nothing could be compared.');
    expect(compareRuns({ before: [], after: [] }).verdict.reason).toBe('Both runs are empty, so nothing could be compared.');
    expect(c.verdict.headline).toBe('Nothing to compare: no question appeared in both runs');
  });

  it('does not call one fixed question an improvement', () => {
    const c = compareRuns(runsWith({ fixed: 1 }));
    expect(c.overall.mcnemarP).toBe(1);
    expect(c.overall.detectableChange.value).toBeNull();
    expect(c.verdict.outcome).toBe('no_detectable_change');
    expect(c.verdict.reason).toContain('1 question is too few to detect a change of any size');
  });

  it('needs six one-way changes before the exact test can call it', () => {
    expect(compareRuns(runsWith({ fixed: 5 })).verdict.outcome).toBe('no_detectable_change');
    expect(compareRuns(runsWith({ fixed: 6 })).verdict.outcome).toBe('improved');
    expect(compareRuns(runsWith({ broken: 6 })).verdict.outcome).toBe('regressed');
  });

  it('assumes one-way discordance for the detectable change when nothing changed', () => {
    const c = compareRuns(runsWith({ bothRight: 500, bothWrong: 500 }));
    expect(c.overall.discordanceRate).toBe(0);
    expect(c.overall.mcnemarP).toBe(1);
    expect(c.overall.detectableChange.discordanceSource).toBe('minimum_for_change');
    expect(c.overall.detectableChange.value).toBeGreaterThan(0.007);
    expect(c.overall.detectableChange.value).toBeLessThan(0.009);
    expect(c.overall.detectableChange.assumedDiscordance).toBe(c.overall.detectableChange.value);
  });
});

describe('trained-on and held-out questions', () => {
  // 40 questions failed before: 30 trained on (25 fixed), 10 held out (6 fixed); 60 passed before (2 broke).
  const trainedPart = runsWith({ fixed: 25, bothWrong: 5 }, { prefix: 't' });
  const heldPart = runsWith({ fixed: 6, bothWrong: 4 }, { prefix: 'h' });
  const passedPart = runsWith({ bothRight: 58, broken: 2 }, { prefix: 'p' });
  const runs = combine(trainedPart, heldPart, passedPart);
  const trainedOn = trainedPart.before.map((q) => q.questionId);
  const heldOut = heldPart.before.map((q) => q.questionId);

  it('decides on the questions not trained on, weighted to all questions by how they did before', () => {
    const c = compareRuns({ ...runs, trainedOn, heldOut });
    const training = c.training!;
    expect(training.trainedOn.table).toEqual({ fixed: 25, broken: 0, bothRight: 0, bothWrong: 5 });
    expect(training.notTrainedOn.table).toEqual({ fixed: 6, broken: 2, bothRight: 58, bothWrong: 4 });
    expect(training.heldOut!.table).toEqual({ fixed: 6, broken: 0, bothRight: 0, bothWrong: 4 });
    expect(training.generalizationMeasured).toBe(true);
    expect(training.generalizationNote).toBeNull();
    expect(training.unmatched).toEqual({ trainedOn: 0, heldOut: 0 });
    expect(training.memorizationNote).toBe(
      'On the 30 trained-on questions accuracy rose from 0.0% to 83.3% (+83.3 pts; 25 fixed vs 0 broken): ' +
        'a memorization check, not evidence that training generalizes.',
    );
    // 40 of the 100 questions failed before, 60 were right: 6 of 10 untrained failures fixed, 2 of 60 right ones broke.
    const g = training.generalization!;
    expect(g.method).toBe('stratified_wilson');
    expect(g.wrongBefore).toEqual({ untrained: 10, moved: 6, rate: 0.6 });
    expect(g.rightBefore).toEqual({ untrained: 60, moved: 2, rate: 2 / 60 });
    expect(g.estimate).toBeCloseTo(0.4 * 0.6 - 0.6 * (2 / 60), 12);
    const fix = wilsonInterval(6, 10);
    const broke = wilsonInterval(2, 60);
    expect(g.interval.lower).toBeCloseTo(g.estimate - Math.hypot(0.4 * (0.6 - fix.lower), 0.6 * (broke.upper - 2 / 60)), 12);
    expect(g.interval.upper).toBeCloseTo(g.estimate + Math.hypot(0.4 * (fix.upper - 0.6), 0.6 * (2 / 60 - broke.lower)), 12);
    expect(c.verdict.basis).toBe('not_trained_on');
    expect(c.verdict.basisQuestions).toBe(70);
    expect(c.verdict.generalizationMeasured).toBe(true);
    expect(c.verdict.method).toBe('stratified_wilson');
    expect(c.verdict.outcome).toBe('improved');
    expect(c.verdict.reason).toBe(
      `On the 70 questions not trained on, weighted to all 100 by how they did before, accuracy rose by 22.0 pts (95% CI ${formatPointsRange(g.interval)}): ` +
        '6 of the 10 failed before and left out of training were fixed (60.0%), 2 of the 60 right before broke (3.3%); ' +
        'the +83.3 pts on the 30 trained-on questions is a memorization check.',
    );
    expect(c.verdict.headline).toBe(`Improved beyond the trained questions: +22.0 pts on the questions not trained on, weighted to all (95% CI ${formatPointsRange(g.interval)})`);
    expect(training.notTrainedOnNote).toBeNull();
  });

  it('reads no change into run-to-run noise, though the questions not trained on were mostly right before', () => {
    // Balanced noise: 30 of 600 right answers break, 30 of 400 wrong ones are fixed; 320 failures trained on and
    // memorized, 80 held out (6 fixed by chance). A plain paired test on the 680 untrained questions sees 6 fixed vs
    // 30 broken, p < 0.0001, and would call that forgetting.
    const noisy = combine(
      runsWith({ bothRight: 570, broken: 30 }, { prefix: 'r' }),
      runsWith({ fixed: 300, bothWrong: 20 }, { prefix: 't' }),
      runsWith({ fixed: 6, bothWrong: 74 }, { prefix: 'h' }),
    );
    const trained = noisy.before.filter((q) => q.questionId.startsWith('t')).map((q) => q.questionId);
    const c = compareRuns({ ...noisy, trainedOn: trained });
    expect(c.training!.notTrainedOn.mcnemarP).toBeLessThan(0.0001);
    expect(c.training!.generalization!.estimate).toBeCloseTo(0, 12);
    expect(c.verdict.outcome).toBe('no_detectable_change');
    expect(c.verdict.headline).toMatch(/^No detectable change beyond the trained questions: 0\.0 pts on the questions not trained on, weighted to all \(95% CI -[\d.]+ to \+[\d.]+\); 300 of 320 trained questions now right \(memorization\)$/);
    expect(c.verdict.reason).toMatch(/accuracy did not move \(95% CI -[\d.]+ to \+[\d.]+\): 6 of the 80 failed before .* 30 of the 600 right before broke \(5\.0%\), so no change was detected;/);
  });

  it('reports forgetting beyond noise on the questions not trained on', () => {
    const forgot = combine(
      runsWith({ bothRight: 480, broken: 120 }, { prefix: 'r' }),
      runsWith({ fixed: 300, bothWrong: 20 }, { prefix: 't' }),
      runsWith({ fixed: 6, bothWrong: 74 }, { prefix: 'h' }),
    );
    const trained = forgot.before.filter((q) => q.questionId.startsWith('t')).map((q) => q.questionId);
    const c = compareRuns({ ...forgot, trainedOn: trained });
    expect(c.verdict.outcome).toBe('regressed');
    expect(c.verdict.reason).toMatch(/^On the 680 questions not trained on, weighted to all 1,000 by how they did before, accuracy fell by 9\.0 pts/);
  });

  it('reports improvement when the untrained questions improve on their own', () => {
    const held = runsWith({ fixed: 20, bothWrong: 10 }, { prefix: 'h' });
    const c = compareRuns({ ...combine(trainedPart, held, passedPart), trainedOn });
    expect(c.verdict.outcome).toBe('improved');
    expect(c.verdict.basis).toBe('not_trained_on');
  });

  it('never claims improvement from memorization alone, and says how to measure generalization', () => {
    const memorized = combine(runsWith({ fixed: 38, bothWrong: 2 }, { prefix: 't' }), passedPart);
    const c = compareRuns({ ...memorized, trainedOn: idsWhere(memorized, (b) => !b.correct) });
    expect(c.overall.mcnemarP).toBeLessThan(1e-6);
    expect(c.training!.generalizationMeasured).toBe(false);
    expect(c.training!.generalization).toBeNull();
    expect(c.verdict.generalizationMeasured).toBe(false);
    expect(c.verdict.outcome).toBe('memorized');
    expect(c.verdict.headline).toBe('Memorized: 38 of 40 trained questions now right; generalization not measured');
    expect(c.training!.notTrainedOnNote).toBe(
      'The 60 questions not trained on were all right before, so they can only stay right or break: that row is a ' +
        'forgetting check and cannot show whether training helps on questions it did not see.',
    );
    expect(c.verdict.reason).toBe(
      'Every question that failed before was trained on, so the change is a memorization check: accuracy on them rose ' +
        'from 0.0% to 95.0% (+95.0 pts), and 2 of the 60 other questions broke, which without a rerun of the baseline ' +
        'cannot be told apart from run-to-run noise; generalization was not measured, ' +
        'so retrain with some failed questions held out to measure it.',
    );
    expect(c.training!.generalizationNote).toBe(
      'Every question that failed before was trained on, so generalization was not measured; ' +
        'retrain with some failed questions held out to measure it.',
    );
  });

  it('when every failed question was trained on, calls broken answers forgetting only against a rerun of the baseline', () => {
    const memorized = combine(runsWith({ fixed: 38, bothWrong: 2 }, { prefix: 't' }), runsWith({ bothRight: 40, broken: 20 }, { prefix: 'p' }));
    const trainedIds = idsWhere(memorized, (b) => !b.correct);
    // Without a rerun, 20 of 60 broken could be a very noisy model: no claim.
    const alone = compareRuns({ ...memorized, trainedOn: trainedIds });
    expect(alone.verdict.outcome).toBe('memorized');
    expect(alone.verdict.reason).toMatch(/20 of the 60 other questions broke, which without a rerun of the baseline cannot be told apart from run-to-run noise/);

    // A rerun of the baseline that breaks 1 of its 60 right answers: 20 of 60 is forgetting.
    const rerun = memorized.before.map((q, i) => (i === memorized.before.length - 1 ? { ...q, correct: false } : q));
    const quiet = compareRuns({ ...memorized, trainedOn: trainedIds, baselineRerun: rerun });
    expect(quiet.noiseFloor!.breaks).toMatchObject({ count: 1, total: 60 });
    expect(quiet.verdict.outcome).toBe('regressed');
    expect(quiet.verdict.method).toBe('break_rate_vs_rerun');
    expect(quiet.verdict.headline).toBe(
      'Regressed: 20 of the 60 questions not trained on broke, more than a rerun of the baseline breaks by chance; generalization not measured',
    );
    expect(quiet.verdict.reason).toMatch(/^Every question that failed before was trained on, so generalization was not measured; but 20 of the 60 other questions that were right before broke \(33\.3%\), more than the 1\.7% a rerun of the baseline breaks by chance/);

    // A rerun that breaks as many as the trained model did: no claim.
    const noisyRerun = memorized.before.map((q, i) => (i >= memorized.before.length - 20 ? { ...q, correct: false } : q));
    const noisy = compareRuns({ ...memorized, trainedOn: trainedIds, baselineRerun: noisyRerun });
    expect(noisy.verdict.outcome).toBe('memorized');
    expect(noisy.verdict.reason).toMatch(/20 of the 60 other questions broke, no more than a rerun of the baseline breaks by chance/);
  });

  it('does not claim every failure was trained on when only the right answers all were', () => {
    // Trained on every question right before and 30 of the 40 failures; 10 failures left out.
    const c = compareRuns({ ...runs, trainedOn: [...trainedOn, ...passedPart.before.map((q) => q.questionId)] });
    expect(c.training!.generalizationMeasured).toBe(true);
    expect(c.training!.generalization).toBeNull();
    expect(c.verdict.outcome).toBe('no_detectable_change');
    expect(c.verdict.headline).toBe('No detectable change: generalization could not be estimated');
    expect(c.verdict.reason).toMatch(/^Some failed questions were left out of training, but every question right before was trained on/);
    expect(c.verdict.reason).not.toMatch(/Every question that failed before was trained on/);
  });

  it('handles training on every compared question', () => {
    const all = runsWith({ fixed: 20, bothRight: 5 });
    const c = compareRuns({ ...all, trainedOn: idsWhere(all, () => true) });
    expect(c.training!.notTrainedOn.questions).toBe(0);
    expect(c.verdict.outcome).toBe('memorized');
    expect(c.verdict.headline).toBe('Memorized: 25 of 25 trained questions now right; generalization not measured');
    expect(c.training!.notTrainedOnNote).toBeNull();
    expect(c.verdict.reason).toMatch(/^Every compared question was trained on, so the change is a memorization check/);
    expect(c.training!.generalizationNote).toMatch(/^Every compared question was trained on/);
  });

  it('counts trained-on and held-out ids missing from the runs', () => {
    const c = compareRuns({ ...runs, trainedOn: [...trainedOn, 'gone-1', 'gone-2'], heldOut: [...heldOut, 'gone-3'] });
    expect(c.training!.unmatched).toEqual({ trainedOn: 2, heldOut: 1 });
  });
});

describe('noise floor from a rerun of the baseline', () => {
  const runs = runsWith({ bothRight: 100, fixed: 30, broken: 10, bothWrong: 60 });

  it('counts flips between the baseline and its rerun and compares them with the observed discordance', () => {
    const rerun = runs.before.map((q, i) => ({ ...q, correct: i % 40 === 0 ? !q.correct : q.correct }));
    const c = compareRuns({ ...runs, baselineRerun: rerun });
    const noise = c.noiseFloor!;
    expect(noise.questions).toBe(200);
    expect(noise.flips.count).toBe(5);
    expect(noise.flips.rate).toBeCloseTo(0.025, 15);
    expect(noise.flipsToRight + noise.flipsToWrong).toBe(5);
    expect(noise.observedDiscordanceRate).toBeCloseTo(0.2, 15);
    expect(noise.exceedsNoise).toBe(true);
    expect(noise.note).toBe(
      'A rerun of the baseline flipped 5 of 200 answers (2.5%, 95% CI 1.1% to 5.7%); before and after differ on 20.0% of questions, more than rerun noise explains.',
    );
  });

  it('says when the observed discordance is within rerun noise', () => {
    const rerun = runs.before.map((q, i) => ({ ...q, correct: i % 5 === 0 ? !q.correct : q.correct }));
    const c = compareRuns({ ...runs, baselineRerun: rerun });
    expect(c.noiseFloor!.flips.count).toBe(40);
    expect(c.noiseFloor!.exceedsNoise).toBe(false);
    expect(c.noiseFloor!.note).toMatch(/within what rerun noise explains\.$/);
  });

  it('counts rerun questions that do not match the baseline', () => {
    const rerun = [...runs.before.slice(10), { questionId: 'extra', category: 'x', correct: true }];
    const c = compareRuns({ ...runs, baselineRerun: rerun });
    expect(c.noiseFloor!.questions).toBe(190);
    expect(c.noiseFloor!.unmatched).toBe(11);
  });
});

describe('graded scores', () => {
  function graded(n: number, change: (i: number) => number): CompareInput {
    const before: QuestionOutcome[] = [];
    const after: QuestionOutcome[] = [];
    for (let i = 0; i < n; i++) {
      const score = 0.2 + ((i * 37) % 60) / 100;
      before.push({ questionId: `g${i}`, category: i % 2 ? 'odd' : 'even', score });
      after.push({ questionId: `g${i}`, category: 'any', score: Math.min(1, Math.max(0, score + change(i))) });
    }
    return { before, after, scoring: 'graded', bootstrap: { resamples: 2000 } };
  }

  it('decides from a bootstrap interval of the mean change', () => {
    const c = compareRuns(graded(300, (i) => (i % 3 === 0 ? 0.15 : i % 3 === 1 ? -0.05 : 0.02)));
    const g = c.overall.graded!;
    expect(g.meanChange).toBeCloseTo(0.04, 10);
    expect(g.interval!.lower).toBeGreaterThan(0);
    expect(g.interval!.upper).toBeGreaterThan(g.meanChange!);
    expect(g.questionsUp).toBe(200);
    expect(g.questionsDown).toBe(100);
    expect(c.verdict.method).toBe('paired_bootstrap');
    expect(c.verdict.outcome).toBe('improved');
    expect(c.settings.bootstrap).toEqual({ resamples: 2000, seed: 20240601 });
    expect(c.verdict.reason).toMatch(/^Mean score rose from \d+\.\d% to \d+\.\d% \(\+4\.0 pts, 95% bootstrap CI \+\d\.\d to \+\d\.\d, 2,000 resamples\); scores rose on 200 questions and fell on 100\.$/);
    expect(c.categories.map((x) => x.category)).toEqual(['even', 'odd']);
    expect(c.categories[0]!.graded!.interval).toBeNull();
  });

  it('finds no change when gains and losses balance', () => {
    const c = compareRuns(graded(300, (i) => (i % 2 === 0 ? 0.1 : -0.1)));
    expect(c.overall.graded!.meanChange).toBeCloseTo(0, 10);
    expect(c.verdict.outcome).toBe('no_detectable_change');
    expect(c.verdict.reason).toMatch(/so no change was detected; with 300 questions only a change of about \d+\.\d pts or more would reliably show\.$/);
  });

  it('with trained-on and held-out ids, weights the untrained questions by failed-or-not before', () => {
    const base = graded(300, () => 0);
    const failed = base.before.filter((q) => q.score! < 0.5).map((q) => q.questionId);
    const heldOut = failed.filter((_, i) => i % 5 === 0);
    const trainedOn = failed.filter((_, i) => i % 5 !== 0);
    const run = (heldGain: number): CompareInput => {
      const trainedSet = new Set(trainedOn);
      const heldSet = new Set(heldOut);
      const after = base.before.map((q, i) => {
        const change = trainedSet.has(q.questionId) ? 0.3 : heldSet.has(q.questionId) ? heldGain + (i % 2 ? 0.02 : -0.02) : i % 2 ? 0.05 : -0.05;
        return { ...q, score: Math.min(1, Math.max(0, q.score! + change)) };
      });
      return { ...base, after, trainedOn, heldOut };
    };
    const flat = compareRuns(run(0));
    const g = flat.training!.generalization!;
    expect(g.method).toBe('stratified_normal');
    expect(g.wrongBefore.untrained).toBe(heldOut.length);
    expect(g.rightBefore.untrained).toBe(300 - failed.length);
    expect(Math.abs(g.estimate)).toBeLessThan(0.005);
    expect(flat.verdict.outcome).toBe('no_detectable_change');
    expect(flat.verdict.method).toBe('stratified_normal');
    const better = compareRuns(run(0.2));
    const w = failed.length / 300;
    // The held-out failures' extra 0.2 counts with the failed questions' share of all questions.
    expect(better.training!.generalization!.estimate).toBeCloseTo(g.estimate + w * 0.2, 2);
    expect(better.verdict.outcome).toBe('improved');
    expect(better.verdict.reason).toMatch(/^On the \d+ questions not trained on, weighted to all 300 by how they did before, mean score rose by/);
  });

  it('calls training on every failure, graded, memorization measured as the mean score on the trained questions', () => {
    const base = graded(100, () => 0);
    const failed = new Set(base.before.filter((q) => q.score! < 1).map((q) => q.questionId));
    const after = base.before.map((q) => ({ ...q, score: failed.has(q.questionId) ? 1 : q.score }));
    const c = compareRuns({ ...base, after, trainedOn: [...failed] });
    expect(c.training!.generalizationMeasured).toBe(false);
    expect(c.verdict.outcome).toBe('memorized');
    const t = c.training!.trainedOn.graded!;
    expect(c.verdict.headline).toBe(
      `Memorized: mean score on the ${failed.size} trained questions ${formatPercent(t.meanBefore)} → 100.0%; generalization not measured`,
    );
  });

  it('will not judge when fewer than six scores moved', () => {
    const c = compareRuns(graded(50, (i) => (i < 5 ? 0.2 : 0)));
    expect(c.overall.graded!.interval!.lower).toBeGreaterThan(0);
    expect(c.verdict.outcome).toBe('no_detectable_change');
    expect(c.verdict.reason).toMatch(/only 5 scores moved, too few to judge a change\.$/);
  });

  it('uses correct/incorrect as a score of 1 or 0 when no score is given', () => {
    const c = compareRuns({ ...runsWith({ bothRight: 10, fixed: 8, bothWrong: 2 }), scoring: 'graded' });
    expect(c.overall.graded!.meanBefore).toBeCloseTo(0.5, 15);
    expect(c.overall.graded!.meanAfter).toBeCloseTo(0.9, 15);
  });

  it('is reproducible: the same input gives the same interval, another seed a different one', () => {
    const input = graded(200, (i) => (i % 4 === 0 ? 0.2 : -0.02));
    const a = compareRuns(input);
    const b = compareRuns(input);
    expect(b).toEqual(a);
    const other = compareRuns({ ...input, bootstrap: { resamples: 2000, seed: 99 } });
    expect(other.overall.graded!.interval).not.toEqual(a.overall.graded!.interval);
  });
});
