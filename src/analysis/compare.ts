// compareRuns: joins two benchmark runs per question and computes every figure and the verdict.
// One pure computation kept in one file so that its figures can be read against the reference values together.

import { DEFAULT_RESAMPLES, DEFAULT_SEED } from './bootstrap.js';
import { AnalysisError } from './errors.js';
import { emptyGradedSums, pairedFigures, proportion, type BootstrapSettings, type GradedSums } from './figures.js';
import { indexById, joinById, type IdIndex } from './join.js';
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

/** A run's outcomes by position, read and checked; scores only when graded. */
interface Outcomes {
  right: Uint8Array;
  score: Float64Array | null;
}

/**
 * The questions in both runs, one column per field; row k is the k-th of them in the order of the
 * after run. `category` numbers the before run's categories (`categoryNames`). Scores are
 * filled when graded, else empty. A set of joined questions is a list of rows.
 */
interface Pairs {
  /** The after run, and each row's position in it: its id is `idOf(pairs, k)`. */
  run: readonly QuestionOutcome[];
  position: Int32Array;
  category: Int32Array;
  categoryNames: string[];
  rightBefore: Uint8Array;
  rightAfter: Uint8Array;
  scoreBefore: Float64Array;
  scoreAfter: Float64Array;
}
type Rows = Int32Array;

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
    joined: pairs.position.length,
    onlyBefore: idSample(onlyBefore.map((i) => before[i]!.questionId)),
    onlyAfter: idSample(unmatchedIds(after, matches)),
  };
  const all = allRows(pairs);
  const overall = subsetFigures(pairs, all, settings);
  const training = trainingIds ? trainingSplit(pairs, all, overall, trainingIds, settings) : null;
  const noiseFloor = input.baselineRerun
    ? measureNoise(input.baselineRerun, before, beforeOutcomes, beforeIndex, overall.discordanceRate)
    : null;
  return {
    version: 1,
    scoring: settings.scoring,
    settings: { alpha: ALPHA, confidence: 1 - ALPHA, power: POWER, bootstrap: settings.bootstrap },
    coverage,
    overall,
    categories: categoryFigures(pairs, all, settings.graded),
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
  const score = graded ? new Float64Array(run.length) : null;
  for (let i = 0; i < run.length; i++) {
    right[i] = isCorrect(run[i]!, name) ? 1 : 0;
    if (score) score[i] = scoreOf(run[i]!, name);
  }
  return { right, score };
}

/** Each question's category as a number: its place among the category names in order of first appearance. */
function numberCategories(run: readonly QuestionOutcome[]): { categoryNames: string[]; numbers: Int32Array } {
  const categoryNames: string[] = [];
  const byName = new Map<string, number>();
  const numbers = new Int32Array(run.length);
  for (let i = 0; i < run.length; i++) {
    const name = run[i]!.category;
    let n = byName.get(name);
    if (n === undefined) {
      n = categoryNames.push(name) - 1;
      byName.set(name, n);
    }
    numbers[i] = n;
  }
  return { categoryNames, numbers };
}

/** The questions of `after` that `matches` found in `before`, in the order of `after`, with the before run's category as a number. */
function pairUp(before: readonly QuestionOutcome[], b: Outcomes, after: readonly QuestionOutcome[], a: Outcomes, matches: Int32Array): Pairs {
  const { categoryNames, numbers: beforeCategory } = numberCategories(before);
  let rows = 0;
  for (const i of matches) if (i !== -1) rows++;
  const p: Pairs = {
    run: after,
    position: new Int32Array(rows),
    category: new Int32Array(rows),
    categoryNames,
    rightBefore: new Uint8Array(rows),
    rightAfter: new Uint8Array(rows),
    scoreBefore: new Float64Array(b.score ? rows : 0),
    scoreAfter: new Float64Array(a.score ? rows : 0),
  };
  let k = 0;
  for (let j = 0; j < after.length; j++) {
    const i = matches[j]!;
    if (i === -1) continue;
    p.position[k] = j;
    p.category[k] = beforeCategory[i]!;
    p.rightBefore[k] = b.right[i]!;
    p.rightAfter[k] = a.right[j]!;
    if (b.score) p.scoreBefore[k] = b.score[i]!;
    if (a.score) p.scoreAfter[k] = a.score[j]!;
    k++;
  }
  return p;
}

function idOf(p: Pairs, k: number): string {
  return p.run[p.position[k]!]!.questionId;
}

/** Every joined question's row. */
function allRows(p: Pairs): Rows {
  const rows = new Int32Array(p.position.length);
  for (let k = 0; k < rows.length; k++) rows[k] = k;
  return rows;
}

/** The ids of the questions of `run` that `matches` did not find in the other run. */
function unmatchedIds(run: readonly QuestionOutcome[], matches: Int32Array): string[] {
  const ids: string[] = [];
  for (let j = 0; j < run.length; j++) if (matches[j] === -1) ids.push(run[j]!.questionId);
  return ids;
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
function pairTable(p: Pairs, rows: Rows): PairCounts {
  const table = { fixed: 0, broken: 0, bothRight: 0, bothWrong: 0 };
  for (const k of rows) {
    if (p.rightBefore[k] === 1) {
      if (p.rightAfter[k] === 1) table.bothRight++;
      else table.broken++;
    } else if (p.rightAfter[k] === 1) table.fixed++;
    else table.bothWrong++;
  }
  return table;
}

/** Score sums of a set of joined questions, added in row order; `differences` holds each change when kept for a bootstrap. */
function scoreSums(p: Pairs, rows: Rows, keepDifferences: boolean): GradedSums {
  const sums = emptyGradedSums();
  for (const k of rows) {
    const change = p.scoreAfter[k]! - p.scoreBefore[k]!;
    sums.sumBefore += p.scoreBefore[k]!;
    sums.sumAfter += p.scoreAfter[k]!;
    sums.sumChange += change;
    sums.sumChangeSquared += change * change;
    if (change > 0) sums.up++;
    else if (change < 0) sums.down++;
  }
  if (keepDifferences) {
    sums.differences = new Float64Array(rows.length);
    for (let r = 0; r < rows.length; r++) sums.differences[r] = p.scoreAfter[rows[r]!]! - p.scoreBefore[rows[r]!]!;
  }
  return sums;
}

/** Every figure of a set of joined questions (graded: with the bootstrap), and its first fixed and broken ids. */
function subsetFigures(p: Pairs, rows: Rows, settings: Settings): SubsetFigures {
  return {
    ...pairedFigures(pairTable(p, rows), settings.graded ? scoreSums(p, rows, true) : null, settings.bootstrap),
    topFixed: smallestIds(idsWhere(p, rows, 0, 1)),
    topBroken: smallestIds(idsWhere(p, rows, 1, 0)),
  };
}

/** The ids of the rows right (1) or wrong (0) before and after as given. */
function idsWhere(p: Pairs, rows: Rows, rightBefore: number, rightAfter: number): string[] {
  const ids: string[] = [];
  for (let r = 0; r < rows.length; r++) {
    const k = rows[r]!;
    if (p.rightBefore[k] === rightBefore && p.rightAfter[k] === rightAfter) ids.push(idOf(p, k));
  }
  return ids;
}

/** Figures per category of the before run (no bootstrap), sorted by category name. */
function categoryFigures(p: Pairs, rows: Rows, graded: boolean): CategoryFigures[] {
  const counts = new Int32Array(p.categoryNames.length);
  for (const k of rows) counts[p.category[k]!]!++;
  const groups = Array.from(counts, (n) => ({ rows: new Int32Array(n), filled: 0 }));
  for (const k of rows) {
    const g = groups[p.category[k]!]!;
    g.rows[g.filled++] = k;
  }
  return p.categoryNames
    .map((category, n) => ({ category, rows: groups[n]!.rows }))
    .filter((c) => c.rows.length > 0)
    .sort((x, y) => (x.category < y.category ? -1 : x.category > y.category ? 1 : 0))
    .map(({ category, rows: members }) => ({ category, ...pairedFigures(pairTable(p, members), graded ? scoreSums(p, members, false) : null, null) }));
}

/** The joined questions split into trained on, not trained on and held out, with the generalization estimate and notes. */
function trainingSplit(p: Pairs, rows: Rows, overall: SubsetFigures, ids: TrainingIds, settings: Settings): TrainingSplit {
  const trainedRows = rows.filter((k) => ids.trainedOn.has(idOf(p, k)));
  const untrainedRows = rows.filter((k) => !ids.trainedOn.has(idOf(p, k)));
  const heldRows = ids.heldOut ? untrainedRows.filter((k) => ids.heldOut!.has(idOf(p, k))) : null;
  const trainedOn = subsetFigures(p, trainedRows, settings);
  const notTrainedOn = subsetFigures(p, untrainedRows, settings);
  const generalizationMeasured = notTrainedOn.table.bothWrong + notTrainedOn.table.fixed > 0;
  // Graded: the failed questions are the trained-on and held-out ones when held-out ids are given.
  const totalWrong = heldRows ? trainedOn.questions + heldRows.length : overall.table.bothWrong + overall.table.fixed;
  const split = {
    trainedOn,
    notTrainedOn,
    generalizationMeasured,
    generalization: generalizationMeasured
      ? estimateGeneralization(overall.table, notTrainedOn.table, settings.graded ? untrainedStrata(p, untrainedRows, ids.heldOut, totalWrong) : null)
      : null,
  };
  return {
    ...split,
    heldOut: heldRows ? subsetFigures(p, heldRows, settings) : null,
    unmatched: {
      trainedOn: ids.trainedOn.size - trainedOn.questions,
      heldOut: ids.heldOut && heldRows ? ids.heldOut.size - heldRows.length : 0,
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
function untrainedStrata(p: Pairs, untrained: Rows, heldOut: Set<string> | null, totalWrong: number): Strata {
  const failedBefore = (k: number) => (heldOut ? heldOut.has(idOf(p, k)) : p.rightBefore[k] === 0);
  const wrong = untrained.filter(failedBefore);
  const right = untrained.filter((k) => !failedBefore(k));
  return { right: scoreSums(p, right, false), wrong: scoreSums(p, wrong, false), rightCount: right.length, wrongCount: wrong.length, totalWrong };
}

/** How often answers flip between the before run and a rerun of the same model, against the observed discordance. */
function measureNoise(
  rerun: readonly QuestionOutcome[],
  before: readonly QuestionOutcome[],
  beforeOutcomes: Outcomes,
  beforeIndex: IdIndex,
  observedDiscordanceRate: number | null,
): NoiseFloor {
  const { matches, onlyBefore } = joinById(before, beforeIndex, rerun, 'baseline rerun');
  const pairs = pairUp(before, beforeOutcomes, rerun, readOutcomes(rerun, 'baseline rerun', false), matches);
  const questions = pairs.position.length;
  const table = pairTable(pairs, allRows(pairs));
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
