// compareRuns: joins two benchmark runs per question and computes every figure and the verdict.

import { DEFAULT_RESAMPLES, DEFAULT_SEED } from './bootstrap.js';
import { AnalysisError } from './errors.js';
import { RunIndex } from './join.js';
import { emptyGradedSums, pairedFigures, proportion, type BootstrapSettings, type GradedSums } from './figures.js';
import { ALPHA, POWER, Z_ALPHA, wilsonInterval, type PairCounts } from './paired-statistics.js';
import type {
  CategoryFigures,
  CompareInput,
  Comparison,
  Coverage,
  GeneralizationEstimate,
  NoiseFloor,
  QuestionOutcome,
  Scoring,
  SubsetFigures,
  TrainingSplit,
} from './types.js';
import { buildVerdict, generalizationNote, memorizationNote, noiseNote, notTrainedOnNote } from './verdict.js';

const SAMPLE_IDS = 10;
const MAX_RESAMPLES = 1_000_000;

/** Cell of the paired table: bit 1 = right before, bit 0 = right after (3 = both right). */
const BOTH_WRONG = 0;
const FIXED = 1;
const BROKEN = 2;

/** Keeps the `limit` smallest ids offered, ascending. */
class SmallestIds {
  readonly ids: string[] = [];
  count = 0;

  constructor(private readonly limit: number) {}

  offer(id: string): void {
    this.count++;
    const ids = this.ids;
    if (ids.length === this.limit && !(id < ids[ids.length - 1]!)) return;
    let at = ids.length;
    while (at > 0 && id < ids[at - 1]!) at--;
    ids.splice(at, 0, id);
    if (ids.length > this.limit) ids.pop();
  }
}

interface Subset {
  cells: [number, number, number, number];
  fixedIds: SmallestIds;
  brokenIds: SmallestIds;
  graded: GradedSums | null;
}

interface Category {
  name: string;
  cells: [number, number, number, number];
  graded: GradedSums | null;
}

function cellsTotal(counts: { cells: [number, number, number, number] }): number {
  return counts.cells[0] + counts.cells[1] + counts.cells[2] + counts.cells[3];
}

function newSubset(graded: boolean, capacity: number): Subset {
  const sums = graded ? emptyGradedSums() : null;
  if (sums) sums.differences = new Float64Array(capacity);
  return { cells: [0, 0, 0, 0], fixedIds: new SmallestIds(SAMPLE_IDS), brokenIds: new SmallestIds(SAMPLE_IDS), graded: sums };
}

function addToSubset(subset: Subset, id: string, cell: number, before: number, after: number): void {
  subset.cells[cell]!++;
  if (cell === FIXED) subset.fixedIds.offer(id);
  else if (cell === BROKEN) subset.brokenIds.offer(id);
  const sums = subset.graded;
  if (sums) {
    addScores(sums, before, after);
    sums.differences![cellsTotal(subset) - 1] = after - before;
  }
}

function addScores(sums: GradedSums, before: number, after: number): void {
  const change = after - before;
  sums.sumBefore += before;
  sums.sumAfter += after;
  sums.sumChange += change;
  sums.sumChangeSquared += change * change;
  if (change > 0) sums.up++;
  else if (change < 0) sums.down++;
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

function subsetFigures(subset: Subset, bootstrap: BootstrapSettings | null): SubsetFigures {
  const [bothWrong, fixed, broken, bothRight] = subset.cells;
  return {
    ...pairedFigures({ fixed, broken, bothRight, bothWrong }, subset.graded, bootstrap),
    topFixed: subset.fixedIds.ids,
    topBroken: subset.brokenIds.ids,
  };
}

function resolveSettings(input: CompareInput): { scoring: Scoring; bootstrap: BootstrapSettings | null } {
  const scoring = input.scoring ?? 'exact_match';
  if (scoring !== 'exact_match' && scoring !== 'graded') {
    throw new AnalysisError('invalid_option', `Unknown scoring "${String(scoring)}".`);
  }
  if (scoring !== 'graded') return { scoring, bootstrap: null };
  const resamples = input.bootstrap?.resamples ?? DEFAULT_RESAMPLES;
  if (!Number.isInteger(resamples) || resamples < 1 || resamples > MAX_RESAMPLES) {
    throw new AnalysisError('invalid_option', `Bootstrap resamples must be an integer from 1 to ${MAX_RESAMPLES}.`);
  }
  const seed = input.bootstrap?.seed ?? DEFAULT_SEED;
  if (!Number.isInteger(seed)) throw new AnalysisError('invalid_option', 'Bootstrap seed must be an integer.');
  return { scoring, bootstrap: { resamples, seed: seed >>> 0 } };
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
  const { scoring, bootstrap } = resolveSettings(input);
  const graded = scoring === 'graded';
  const { before, after } = input;

  if (input.heldOut && !input.trainedOn) {
    throw new AnalysisError('invalid_option', 'Held-out ids need the trained-on ids too.');
  }
  const trainedSet = input.trainedOn ? new Set(input.trainedOn) : null;
  const heldSet = input.heldOut ? new Set(input.heldOut) : null;
  if (trainedSet && heldSet) {
    for (const id of heldSet) {
      if (trainedSet.has(id)) {
        throw new AnalysisError('trained_and_held_out', `Question ${id} is listed as both trained on and held out.`);
      }
    }
  }

  const index = new RunIndex(before, 'before');
  // Per before-question: (category number << 1) | right, so the join reads one packed word.
  const beforeInfo = new Int32Array(before.length);
  const beforeScore = graded ? new Float64Array(before.length) : null;
  const categories: Category[] = [];
  const categoryNumbers = new Map<string, number>();
  let lastCategory: string | null = null;
  let lastNumber = 0;
  for (let i = 0; i < before.length; i++) {
    const q = before[i]!;
    if (q.category !== lastCategory) {
      lastCategory = q.category;
      let number = categoryNumbers.get(lastCategory);
      if (number === undefined) {
        number = categories.length;
        categoryNumbers.set(lastCategory, number);
        categories.push({ name: lastCategory, cells: [0, 0, 0, 0], graded: graded ? emptyGradedSums() : null });
      }
      lastNumber = number;
    }
    beforeInfo[i] = (lastNumber << 1) | (isCorrect(q, 'before') ? 1 : 0);
    if (beforeScore) beforeScore[i] = scoreOf(q, 'before');
  }

  const positions = index.positionsOf(after, 'after');

  const capacity = Math.min(before.length, after.length);
  const overall = newSubset(graded, capacity);
  const trained = trainedSet ? newSubset(graded, capacity) : null;
  const notTrained = trainedSet ? newSubset(graded, capacity) : null;
  const held = heldSet ? newSubset(graded, capacity) : null;
  let notTrainedFailures = 0;
  // Graded score sums of the questions not trained on, by before-outcome (full marks or not).
  const untrainedStrata = graded && trainedSet ? { right: emptyGradedSums(), wrong: emptyGradedSums(), rightCount: 0, wrongCount: 0 } : null;

  const matched = new Uint8Array(before.length);
  const onlyAfter = new SmallestIds(SAMPLE_IDS);

  for (let j = 0; j < after.length; j++) {
    const q = after[j]!;
    const id = q.questionId;
    const afterRight = isCorrect(q, 'after') ? 1 : 0;
    const afterScore = graded ? scoreOf(q, 'after') : afterRight;
    const i = positions[j]!;
    if (i === -1) {
      onlyAfter.offer(id);
      continue;
    }
    matched[i] = 1;

    const info = beforeInfo[i]!;
    const cell = ((info & 1) << 1) | afterRight;
    const beforeScoreValue = beforeScore ? beforeScore[i]! : info & 1;
    addToSubset(overall, id, cell, beforeScoreValue, afterScore);

    const category = categories[info >> 1]!;
    category.cells[cell]!++;
    if (category.graded) addScores(category.graded, beforeScoreValue, afterScore);

    if (trainedSet) {
      if (trainedSet.has(id)) {
        addToSubset(trained!, id, cell, beforeScoreValue, afterScore);
      } else {
        addToSubset(notTrained!, id, cell, beforeScoreValue, afterScore);
        if (cell === BOTH_WRONG || cell === FIXED) notTrainedFailures++;
        // Graded: the failed questions are the trained-on and held-out ones when held-out ids are given.
        if (untrainedStrata) {
          const failedBefore = heldSet ? heldSet.has(id) : (info & 1) === 0;
          addScores(failedBefore ? untrainedStrata.wrong : untrainedStrata.right, beforeScoreValue, afterScore);
          if (failedBefore) untrainedStrata.wrongCount++;
          else untrainedStrata.rightCount++;
        }
        if (heldSet?.has(id)) addToSubset(held!, id, cell, beforeScoreValue, afterScore);
      }
    }
  }

  const onlyBefore = new SmallestIds(SAMPLE_IDS);
  for (let i = 0; i < before.length; i++) {
    if (matched[i] === 0) onlyBefore.offer(before[i]!.questionId);
  }

  const joined = cellsTotal(overall);
  const coverage: Coverage = {
    before: before.length,
    after: after.length,
    joined,
    onlyBefore: { count: onlyBefore.count, sampleIds: onlyBefore.ids },
    onlyAfter: { count: onlyAfter.count, sampleIds: onlyAfter.ids },
  };

  const overallFigures = subsetFigures(overall, bootstrap);
  const categoryFigures: CategoryFigures[] = categories
    .filter((c) => cellsTotal(c) > 0)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((c) => {
      const [bothWrong, fixed, broken, bothRight] = c.cells;
      return { category: c.name, ...pairedFigures({ fixed, broken, bothRight, bothWrong }, c.graded, null) };
    });

  let training: TrainingSplit | null = null;
  if (trainedSet && trained && notTrained) {
    const trainedFigures = subsetFigures(trained, bootstrap);
    const notTrainedFigures = subsetFigures(notTrained, bootstrap);
    const split = {
      trainedOn: trainedFigures,
      notTrainedOn: notTrainedFigures,
      generalizationMeasured: notTrainedFailures > 0,
      generalization:
        notTrainedFailures > 0
          ? estimateGeneralization(
              overallFigures.table,
              notTrainedFigures.table,
              untrainedStrata && {
                ...untrainedStrata,
                totalWrong: heldSet ? trainedFigures.questions + cellsTotal(held!) : overallFigures.table.bothWrong + overallFigures.table.fixed,
              },
            )
          : null,
    };
    training = {
      ...split,
      heldOut: held ? subsetFigures(held, bootstrap) : null,
      unmatched: {
        trainedOn: trainedSet.size - trainedFigures.questions,
        heldOut: heldSet ? heldSet.size - (held ? cellsTotal(held) : 0) : 0,
      },
      memorizationNote: memorizationNote(trainedFigures, scoring),
      generalizationNote: generalizationNote(split),
      notTrainedOnNote: notTrainedOnNote(split, scoring),
    };
  }

  const noiseFloor = input.baselineRerun
    ? measureNoise(input.baselineRerun, before, index, beforeInfo, overallFigures.discordanceRate)
    : null;

  const resamples = bootstrap?.resamples ?? 0;
  return {
    version: 1,
    scoring,
    settings: { alpha: ALPHA, confidence: 1 - ALPHA, power: POWER, bootstrap },
    coverage,
    overall: overallFigures,
    categories: categoryFigures,
    training,
    noiseFloor,
    verdict: buildVerdict(scoring, coverage, overallFigures, training, resamples, noiseFloor),
  };
}

function measureNoise(
  rerun: readonly QuestionOutcome[],
  before: readonly QuestionOutcome[],
  index: RunIndex,
  beforeInfo: Int32Array,
  observedDiscordanceRate: number | null,
): NoiseFloor {
  const positions = index.positionsOf(rerun, 'baseline rerun');
  let questions = 0;
  let toRight = 0;
  let toWrong = 0;
  let rightBefore = 0;
  for (let j = 0; j < rerun.length; j++) {
    const right = isCorrect(rerun[j]!, 'baseline rerun') ? 1 : 0;
    const i = positions[j]!;
    if (i === -1) continue;
    questions++;
    const wasRight = beforeInfo[i]! & 1;
    rightBefore += wasRight;
    if (wasRight === 0 && right === 1) toRight++;
    else if (wasRight === 1 && right === 0) toWrong++;
  }
  const flips = proportion(toRight + toWrong, questions);
  const noise = {
    questions,
    unmatched: before.length + rerun.length - 2 * questions,
    flips,
    flipsToRight: toRight,
    flipsToWrong: toWrong,
    breaks: proportion(toWrong, rightBefore),
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
  strata: { right: GradedSums; wrong: GradedSums; rightCount: number; wrongCount: number; totalWrong: number } | null,
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
