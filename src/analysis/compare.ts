// compareRuns: joins two benchmark runs per question and computes every figure and the verdict.

import { DEFAULT_RESAMPLES, DEFAULT_SEED } from './bootstrap.js';
import { AnalysisError } from './errors.js';
import { emptyGradedSums, pairedFigures, proportion, type BootstrapSettings, type GradedSums } from './figures.js';
import { indexById, joinById } from './join.js';
import { ALPHA, POWER, Z_ALPHA, wilsonInterval, type PairCounts } from './paired-statistics.js';
import type {
  CategoryFigures,
  CompareInput,
  Comparison,
  Coverage,
  GeneralizationEstimate,
  IdSample,
  NoiseFloor,
  QuestionOutcome,
  Scoring,
  SubsetFigures,
  TrainingSplit,
} from './types.js';
import { buildVerdict, generalizationNote, memorizationNote, noiseNote, notTrainedOnNote } from './verdict.js';

const SAMPLE_IDS = 10;
const MAX_RESAMPLES = 1_000_000;

/** A run's outcomes by position, read and checked; under exact match a score is 1 or 0. */
interface Outcomes {
  right: Uint8Array;
  score: Float64Array;
}

/** A question in both runs, with its outcome in each; its category is the before run's. */
interface Pair {
  questionId: string;
  category: string;
  rightBefore: boolean;
  rightAfter: boolean;
  scoreBefore: number;
  scoreAfter: number;
}

interface Settings {
  scoring: Scoring;
  graded: boolean;
  bootstrap: BootstrapSettings | null;
}

interface TrainingIds {
  trainedOn: Set<string>;
  heldOut: Set<string> | null;
}

/**
 * Compares two runs of the same benchmark, question by question. Pure and synchronous.
 *
 * Questions are joined by id; those in only one run are counted (with a few ids) and left out of
 * every figure. A joined question takes its category from the `before` run. Throws AnalysisError
 * for a duplicate id within a run, a missing or out-of-range outcome, an id both trained on and
 * held out, or `heldOut` without `trainedOn`. The verdict rule is documented on `buildVerdict`.
 */
export function compareRuns(input: CompareInput): Comparison {
  const settings = resolveSettings(input);
  const trainingIds = resolveTrainingIds(input);
  const { before, after } = input;
  const beforeOutcomes = readOutcomes(before, 'before', settings.graded);
  const beforeIndex = indexById(before, 'before');
  const { matches, onlyBefore } = joinById(before, beforeIndex, after, 'after');
  const pairs = pairUp(before, beforeOutcomes, after, readOutcomes(after, 'after', settings.graded), matches);
  const coverage: Coverage = {
    before: before.length,
    after: after.length,
    joined: pairs.length,
    onlyBefore: idSample(onlyBefore.map((i) => before[i]!.questionId)),
    onlyAfter: idSample(after.filter((_, j) => matches[j] === -1).map((q) => q.questionId)),
  };
  const overall = subsetFigures(pairs, settings);
  const training = trainingIds ? trainingSplit(pairs, overall, trainingIds, settings) : null;
  const noiseFloor = input.baselineRerun
    ? measureNoise(input.baselineRerun, before, beforeOutcomes, beforeIndex, overall.discordanceRate)
    : null;
  return {
    version: 1,
    scoring: settings.scoring,
    settings: { alpha: ALPHA, confidence: 1 - ALPHA, power: POWER, bootstrap: settings.bootstrap },
    coverage,
    overall,
    categories: categoryFigures(pairs, settings.graded),
    training,
    noiseFloor,
    verdict: buildVerdict(settings.scoring, coverage, overall, training, settings.bootstrap?.resamples ?? 0, noiseFloor),
  };
}

function resolveSettings(input: CompareInput): Settings {
  const scoring = input.scoring ?? 'exact_match';
  if (scoring !== 'exact_match' && scoring !== 'graded') {
    throw new AnalysisError('invalid_option', `Unknown scoring "${String(scoring)}".`);
  }
  if (scoring !== 'graded') return { scoring, graded: false, bootstrap: null };
  const resamples = input.bootstrap?.resamples ?? DEFAULT_RESAMPLES;
  if (!Number.isInteger(resamples) || resamples < 1 || resamples > MAX_RESAMPLES) {
    throw new AnalysisError('invalid_option', `Bootstrap resamples must be an integer from 1 to ${MAX_RESAMPLES}.`);
  }
  const seed = input.bootstrap?.seed ?? DEFAULT_SEED;
  if (!Number.isInteger(seed)) throw new AnalysisError('invalid_option', 'Bootstrap seed must be an integer.');
  return { scoring, graded: true, bootstrap: { resamples, seed: seed >>> 0 } };
}

/** The trained-on and held-out ids as sets, checked to be disjoint; null without trained-on ids. */
function resolveTrainingIds(input: CompareInput): TrainingIds | null {
  if (input.heldOut && !input.trainedOn) {
    throw new AnalysisError('invalid_option', 'Held-out ids need the trained-on ids too.');
  }
  if (!input.trainedOn) return null;
  const trainedOn = new Set(input.trainedOn);
  const heldOut = input.heldOut ? new Set(input.heldOut) : null;
  for (const id of heldOut ?? []) {
    if (trainedOn.has(id)) {
      throw new AnalysisError('trained_and_held_out', `Question ${id} is listed as both trained on and held out.`);
    }
  }
  return { trainedOn, heldOut };
}

function readOutcomes(run: readonly QuestionOutcome[], name: string, graded: boolean): Outcomes {
  const right = new Uint8Array(run.length);
  const score = new Float64Array(run.length);
  for (let i = 0; i < run.length; i++) {
    right[i] = isCorrect(run[i]!, name) ? 1 : 0;
    score[i] = graded ? scoreOf(run[i]!, name) : right[i]!;
  }
  return { right, score };
}

/** The questions of `after` that `matches` found in `before`, in the order of `after`. */
function pairUp(before: readonly QuestionOutcome[], b: Outcomes, after: readonly QuestionOutcome[], a: Outcomes, matches: Int32Array): Pair[] {
  const pairs: Pair[] = [];
  for (let j = 0; j < after.length; j++) {
    const i = matches[j]!;
    if (i === -1) continue;
    pairs.push({
      questionId: after[j]!.questionId,
      category: before[i]!.category,
      rightBefore: b.right[i] === 1,
      rightAfter: a.right[j] === 1,
      scoreBefore: b.score[i]!,
      scoreAfter: a.score[j]!,
    });
  }
  return pairs;
}

function isCorrect(q: QuestionOutcome, run: string): boolean {
  if (typeof q.correct === 'boolean') return q.correct;
  if (typeof q.score === 'number') return checkedScore(q.score, q.questionId, run) === 1;
  throw new AnalysisError('missing_outcome', `Question ${q.questionId} in the ${run} run has neither "correct" nor "score".`);
}

function scoreOf(q: QuestionOutcome, run: string): number {
  if (typeof q.score === 'number') return checkedScore(q.score, q.questionId, run);
  if (typeof q.correct === 'boolean') return q.correct ? 1 : 0;
  throw new AnalysisError('missing_outcome', `Question ${q.questionId} in the ${run} run has neither "score" nor "correct".`);
}

function checkedScore(score: number, id: string, run: string): number {
  if (!(score >= 0 && score <= 1)) {
    throw new AnalysisError('invalid_score', `Question ${id} in the ${run} run has score ${score}; scores must be in [0, 1].`);
  }
  return score;
}

/** How many questions, and the first few ids in ascending order. */
function idSample(ids: readonly string[]): IdSample {
  return { count: ids.length, sampleIds: smallestIds(ids) };
}

/** The `SAMPLE_IDS` smallest ids, ascending. */
function smallestIds(ids: readonly string[]): string[] {
  const kept: string[] = [];
  for (const id of ids) {
    if (kept.length === SAMPLE_IDS && !(id < kept[SAMPLE_IDS - 1]!)) continue;
    let at = kept.length;
    while (at > 0 && id < kept[at - 1]!) at--;
    kept.splice(at, 0, id);
    if (kept.length > SAMPLE_IDS) kept.pop();
  }
  return kept;
}

/** The 2x2 table of a set of joined questions. */
function pairTable(pairs: readonly Pair[]): PairCounts {
  const table = { fixed: 0, broken: 0, bothRight: 0, bothWrong: 0 };
  for (const p of pairs) {
    if (p.rightBefore) {
      if (p.rightAfter) table.bothRight++;
      else table.broken++;
    } else if (p.rightAfter) table.fixed++;
    else table.bothWrong++;
  }
  return table;
}

/** Score sums of a set of joined questions, added in the order given; `differences` holds each change when kept for a bootstrap. */
function scoreSums(pairs: readonly Pair[], keepDifferences: boolean): GradedSums {
  const sums = emptyGradedSums();
  for (const p of pairs) {
    const change = p.scoreAfter - p.scoreBefore;
    sums.sumBefore += p.scoreBefore;
    sums.sumAfter += p.scoreAfter;
    sums.sumChange += change;
    sums.sumChangeSquared += change * change;
    if (change > 0) sums.up++;
    else if (change < 0) sums.down++;
  }
  if (keepDifferences) sums.differences = Float64Array.from(pairs, (p) => p.scoreAfter - p.scoreBefore);
  return sums;
}

/** Every figure of a set of joined questions (graded: with the bootstrap), and its first fixed and broken ids. */
function subsetFigures(pairs: readonly Pair[], settings: Settings): SubsetFigures {
  const idsWhere = (rightBefore: boolean, rightAfter: boolean) =>
    pairs.filter((p) => p.rightBefore === rightBefore && p.rightAfter === rightAfter).map((p) => p.questionId);
  return {
    ...pairedFigures(pairTable(pairs), settings.graded ? scoreSums(pairs, true) : null, settings.bootstrap),
    topFixed: smallestIds(idsWhere(false, true)),
    topBroken: smallestIds(idsWhere(true, false)),
  };
}

/** Figures per category of the before run (no bootstrap), sorted by category name. */
function categoryFigures(pairs: readonly Pair[], graded: boolean): CategoryFigures[] {
  const byCategory = new Map<string, Pair[]>();
  for (const pair of pairs) {
    const group = byCategory.get(pair.category);
    if (group) group.push(pair);
    else byCategory.set(pair.category, [pair]);
  }
  return [...byCategory]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([category, group]) => ({ category, ...pairedFigures(pairTable(group), graded ? scoreSums(group, false) : null, null) }));
}

/** The joined questions split into trained on, not trained on and held out, with the generalization estimate and notes. */
function trainingSplit(pairs: readonly Pair[], overall: SubsetFigures, ids: TrainingIds, settings: Settings): TrainingSplit {
  const trainedPairs = pairs.filter((p) => ids.trainedOn.has(p.questionId));
  const untrainedPairs = pairs.filter((p) => !ids.trainedOn.has(p.questionId));
  const heldPairs = ids.heldOut ? untrainedPairs.filter((p) => ids.heldOut!.has(p.questionId)) : null;
  const trainedOn = subsetFigures(trainedPairs, settings);
  const notTrainedOn = subsetFigures(untrainedPairs, settings);
  const generalizationMeasured = notTrainedOn.table.bothWrong + notTrainedOn.table.fixed > 0;
  // Graded: the failed questions are the trained-on and held-out ones when held-out ids are given.
  const totalWrong = heldPairs ? trainedOn.questions + heldPairs.length : overall.table.bothWrong + overall.table.fixed;
  const split = {
    trainedOn,
    notTrainedOn,
    generalizationMeasured,
    generalization: generalizationMeasured
      ? estimateGeneralization(overall.table, notTrainedOn.table, settings.graded ? untrainedStrata(untrainedPairs, ids.heldOut, totalWrong) : null)
      : null,
  };
  return {
    ...split,
    heldOut: heldPairs ? subsetFigures(heldPairs, settings) : null,
    unmatched: {
      trainedOn: ids.trainedOn.size - trainedOn.questions,
      heldOut: ids.heldOut && heldPairs ? ids.heldOut.size - heldPairs.length : 0,
    },
    memorizationNote: memorizationNote(trainedOn, settings.scoring),
    generalizationNote: generalizationNote(split),
    notTrainedOnNote: notTrainedOnNote(split, settings.scoring),
  };
}

interface Strata {
  right: GradedSums;
  wrong: GradedSums;
  rightCount: number;
  wrongCount: number;
  /** Joined questions that failed before: the stratum's weight. */
  totalWrong: number;
}

/** Graded: score sums of the questions not trained on, by whether they failed before (held out, when held-out ids are given). */
function untrainedStrata(untrained: readonly Pair[], heldOut: Set<string> | null, totalWrong: number): Strata {
  const failedBefore = (p: Pair) => (heldOut ? heldOut.has(p.questionId) : !p.rightBefore);
  const wrong = untrained.filter(failedBefore);
  const right = untrained.filter((p) => !failedBefore(p));
  return { right: scoreSums(right, false), wrong: scoreSums(wrong, false), rightCount: right.length, wrongCount: wrong.length, totalWrong };
}

/** How often answers flip between the before run and a rerun of the same model, against the observed discordance. */
function measureNoise(
  rerun: readonly QuestionOutcome[],
  before: readonly QuestionOutcome[],
  beforeOutcomes: Outcomes,
  beforeIndex: Map<string, number>,
  observedDiscordanceRate: number | null,
): NoiseFloor {
  const { matches, onlyBefore } = joinById(before, beforeIndex, rerun, 'baseline rerun');
  const pairs = pairUp(before, beforeOutcomes, rerun, readOutcomes(rerun, 'baseline rerun', false), matches);
  const table = pairTable(pairs);
  const questions = pairs.length;
  const flips = proportion(table.fixed + table.broken, questions);
  const noise = {
    questions,
    unmatched: onlyBefore.length + (rerun.length - questions),
    flips,
    flipsToRight: table.fixed,
    flipsToWrong: table.broken,
    breaks: proportion(table.broken, table.bothRight + table.broken),
    observedDiscordanceRate,
    exceedsNoise: questions > 0 && observedDiscordanceRate !== null && observedDiscordanceRate > flips.interval.upper,
  };
  return { ...noise, note: noiseNote(noise) };
}

/**
 * The change on questions not trained on, standardized to all joined questions. Training was
 * chosen by the before-outcome (failed questions), so the questions not trained on are mostly ones
 * that were right before, which can only break: a plain paired test on them mistakes run-to-run
 * noise for forgetting. Instead each before-outcome stratum (right before, wrong before) is
 * estimated from its members not trained on and weighted by its share of all joined questions:
 * under no change, fixes among failures balance breaks among right answers, so the estimate is 0.
 * Exact match: Wilson intervals per stratum combined by MOVER (Newcombe's square-and-add for a
 * weighted difference of independent proportions). Graded: normal intervals of the stratum means.
 * Null when a stratum present among all questions has no member left out of training.
 */
function estimateGeneralization(
  all: PairCounts,
  untrained: PairCounts,
  strata: Strata | null,
): GeneralizationEstimate | null {
  const n = all.bothRight + all.broken + all.bothWrong + all.fixed;
  const totalWrong = strata ? strata.totalWrong : all.bothWrong + all.fixed;
  const totalRight = n - totalWrong;
  const right = strata ? strata.rightCount : untrained.bothRight + untrained.broken;
  const wrong = strata ? strata.wrongCount : untrained.bothWrong + untrained.fixed;
  if (n === 0 || (totalRight > 0 && right === 0) || (totalWrong > 0 && wrong === 0)) return null;
  const wRight = totalRight / n;
  const wWrong = totalWrong / n;
  const rightBefore = { untrained: right, moved: untrained.broken, rate: right > 0 ? untrained.broken / right : 0 };
  const wrongBefore = { untrained: wrong, moved: untrained.fixed, rate: wrong > 0 ? untrained.fixed / wrong : 0 };
  if (!strata) {
    const fix = wilsonInterval(untrained.fixed, wrong);
    const brk = wilsonInterval(untrained.broken, right);
    const f = wrongBefore.rate;
    const b = rightBefore.rate;
    const estimate = wWrong * f - wRight * b;
    return {
      method: 'stratified_wilson',
      estimate,
      interval: {
        lower: Math.max(-1, estimate - Math.hypot(wWrong * (f - fix.lower), wRight * (brk.upper - b))),
        upper: Math.min(1, estimate + Math.hypot(wWrong * (fix.upper - f), wRight * (b - brk.lower))),
      },
      rightBefore,
      wrongBefore,
    };
  }
  const meanAndVariance = (sums: GradedSums, count: number) => {
    if (count === 0) return { mean: 0, variance: 0 };
    const mean = sums.sumChange / count;
    const variance = count > 1 ? Math.max(0, (sums.sumChangeSquared - sums.sumChange * mean) / (count - 1)) / count : 0;
    return { mean, variance };
  };
  const r = meanAndVariance(strata.right, right);
  const w = meanAndVariance(strata.wrong, wrong);
  const estimate = wRight * r.mean + wWrong * w.mean;
  const spread = Z_ALPHA * Math.sqrt(wRight * wRight * r.variance + wWrong * wWrong * w.variance);
  return {
    method: 'stratified_normal',
    estimate,
    interval: { lower: Math.max(-1, estimate - spread), upper: Math.min(1, estimate + spread) },
    rightBefore: { ...rightBefore, moved: strata.right.down, rate: right > 0 ? strata.right.down / right : 0 },
    wrongBefore: { ...wrongBefore, moved: strata.wrong.up, rate: wrong > 0 ? strata.wrong.up / wrong : 0 },
  };
}
