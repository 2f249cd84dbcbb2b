// The verdict rule and the one-sentence reasons, written from the figures alone.

import {
  formatCount,
  formatPClause,
  formatPercent,
  formatPoints,
  formatPointsRange,
} from './format.js';
import { ALPHA, wilsonInterval } from './paired-statistics.js';
import type {
  Coverage,
  GeneralizationEstimate,
  NoiseFloor,
  PairedFigures,
  Scoring,
  SubsetFigures,
  Verdict,
  VerdictOutcome,
} from './types.js';

/**
 * Fewest questions whose graded score must move before a graded verdict is allowed: below 6, even
 * if every one moved the same way the exact sign test could not reach p < 0.05 (2 * 0.5^5 = 0.0625),
 * and a percentile bootstrap over so few values is too narrow to trust.
 */
export const MIN_MOVED_FOR_GRADED_VERDICT = 6;

const HELD_OUT_ADVICE = 'retrain with some failed questions held out to measure it';

/**
 * Exact match: `improved` (or `regressed`) when the exact McNemar p is below ALPHA and Newcombe's
 * interval excludes 0 on the same side; both must agree, so a borderline test never outruns its
 * interval. Graded: when the bootstrap interval of the mean change excludes 0 and at least
 * MIN_MOVED_FOR_GRADED_VERDICT scores moved.
 */
export function decideOutcome(figures: PairedFigures, scoring: Scoring): VerdictOutcome {
  if (figures.questions === 0) return 'no_detectable_change';
  if (scoring === 'graded') {
    const graded = figures.graded;
    if (!graded?.interval) return 'no_detectable_change';
    if (graded.questionsUp + graded.questionsDown < MIN_MOVED_FOR_GRADED_VERDICT) return 'no_detectable_change';
    if (graded.interval.lower > 0) return 'improved';
    if (graded.interval.upper < 0) return 'regressed';
    return 'no_detectable_change';
  }
  if (figures.mcnemarP >= ALPHA) return 'no_detectable_change';
  if (figures.change.interval.lower > 0) return 'improved';
  if (figures.change.interval.upper < 0) return 'regressed';
  return 'no_detectable_change';
}

export interface TrainingFigures {
  trainedOn: SubsetFigures;
  notTrainedOn: SubsetFigures;
  generalizationMeasured: boolean;
  generalization: GeneralizationEstimate | null;
}

/**
 * Decides on the questions that measure generalization. Without trained-on ids: all joined
 * questions, by the exact McNemar test and Newcombe's interval (graded: the paired bootstrap).
 * With them: the questions not trained on, standardized to all questions by before-outcome
 * (`TrainingSplit.generalization`), because training was chosen by the before-outcome and a plain
 * paired test on the rest would read run-to-run noise as forgetting; the trained-on change is
 * reported only as a memorization check. When every failed question was trained on, generalization
 * was not measured and no improvement can be claimed: the outcome is `regressed` when a rerun of
 * the baseline shows that right answers break less often by chance than they did here, else
 * `memorized` (what was measured is how many trained questions are now right), and the reason says
 * how to measure generalization. Every outcome comes with a headline built from the same figures
 * as the table.
 */
export function buildVerdict(
  scoring: Scoring,
  coverage: Coverage,
  overall: SubsetFigures,
  training: TrainingFigures | null,
  resamples: number,
  noise: Omit<NoiseFloor, 'note'> | null = null,
): Verdict {
  const method: Verdict['method'] = scoring === 'graded' ? 'paired_bootstrap' : 'exact_mcnemar_and_newcombe';
  const basisFigures = training ? training.notTrainedOn : overall;
  const base = {
    basis: training ? ('not_trained_on' as const) : ('all_questions' as const),
    basisQuestions: basisFigures.questions,
    generalizationMeasured: training ? training.generalizationMeasured : null,
    method,
  };

  if (coverage.joined === 0) {
    const empty = coverage.before + coverage.after === 0;
    const reason = empty
      ? 'Both runs are empty, so nothing could be compared.'
      : `No question appeared in both runs (${formatCount(coverage.onlyBefore.count)} only before, ` +
        `${formatCount(coverage.onlyAfter.count)} only after), so nothing could be compared.`;
    const headline = empty ? 'Nothing to compare: both runs are empty' : 'Nothing to compare: no question appeared in both runs';
    return { ...base, outcome: 'no_detectable_change', headline, reason };
  }

  if (!training) {
    const outcome = decideOutcome(basisFigures, scoring);
    return {
      ...base,
      outcome,
      headline: allQuestionsHeadline(outcome, basisFigures, scoring),
      reason: sentence(outcome, basisFigures, scoring, resamples, '', ''),
    };
  }

  const g = training.generalization;
  if (training.generalizationMeasured && g) {
    let outcome: VerdictOutcome = g.interval.lower > 0 ? 'improved' : g.interval.upper < 0 ? 'regressed' : 'no_detectable_change';
    const moved = g.rightBefore.moved + g.wrongBefore.moved;
    if (scoring === 'graded' && moved < MIN_MOVED_FOR_GRADED_VERDICT) outcome = 'no_detectable_change';
    return {
      ...base,
      method: g.method,
      outcome,
      headline: generalizationHeadline(outcome, g, training, scoring),
      reason: generalizationSentence(outcome, g, overall.questions, training, scoring),
    };
  }
  if (training.generalizationMeasured) {
    // Some failures were left out, but no right-before question was: the others cannot be weighted to all.
    const rightWord = scoring === 'graded' ? 'at full marks' : 'right';
    const reason =
      `Some failed questions were left out of training, but every question ${rightWord} before was trained on, ` +
      `so the change on the others cannot be weighted to all questions and generalization was not estimated; ` +
      `the ${changeText(training.trainedOn, scoring)} on the ${questions(training.trainedOn.questions, 'trained-on')} is a memorization check.`;
    return { ...base, outcome: 'no_detectable_change', headline: 'No detectable change: generalization could not be estimated', reason };
  }

  const others = training.notTrainedOn;
  const rightOthers = others.table.bothRight + others.table.broken;
  if (scoring === 'exact_match' && noise && noise.breaks.total > 0 && rightOthers > 0) {
    const broke = wilsonInterval(others.table.broken, rightOthers);
    const b = others.table.broken / rightOthers;
    const r = noise.breaks.rate ?? 0;
    const lower = b - r - Math.hypot(b - broke.lower, noise.breaks.interval.upper - r);
    if (lower > 0) {
      const reason =
        `Every question that failed before was trained on, so generalization was not measured; but ` +
        `${formatCount(others.table.broken)} of the ${questions(rightOthers, 'other')} that were right before broke ` +
        `(${formatPercent(b)}), more than the ${formatPercent(r)} a rerun of the baseline breaks by chance ` +
        `(difference ${formatPoints(b - r)}, 95% lower bound ${formatPoints(lower)}): that is forgetting.`;
      const headline =
        `Regressed: ${formatCount(others.table.broken)} of the ${questions(rightOthers)} not trained on broke, ` +
        `more than a rerun of the baseline breaks by chance; generalization not measured`;
      return { ...base, method: 'break_rate_vs_rerun', outcome: 'regressed', headline, reason };
    }
  }
  const trained = training.trainedOn;
  if (trained.questions === 0) {
    return {
      ...base,
      outcome: 'no_detectable_change',
      headline: 'No detectable change: none of the trained-on questions appeared in both runs; generalization not measured',
      reason: memorizationOnlySentence(scoring, training, noise !== null),
    };
  }
  return { ...base, outcome: 'memorized', headline: memorizedHeadline(trained, scoring), reason: memorizationOnlySentence(scoring, training, noise !== null) };
}

const OUTCOME_WORDS: Record<VerdictOutcome, string> = {
  improved: 'Improved',
  regressed: 'Regressed',
  no_detectable_change: 'No detectable change',
  memorized: 'Memorized',
};

/** "Improved: accuracy 61.0% → 74.0% (+13.0 pts, 95% CI +5.0 to +20.8)", the figures of the "All questions" row. */
function allQuestionsHeadline(outcome: VerdictOutcome, figures: PairedFigures, scoring: Scoring): string {
  const graded = scoring === 'graded' ? figures.graded : null;
  const before = graded ? graded.meanBefore : figures.accuracyBefore.rate;
  const after = graded ? graded.meanAfter : figures.accuracyAfter.rate;
  const interval = graded ? graded.interval : figures.change.interval;
  const ci = interval ? `, 95% ${graded ? 'bootstrap ' : ''}CI ${formatPointsRange(interval)}` : '';
  return (
    `${OUTCOME_WORDS[outcome]}: ${metricName(scoring)} ${formatPercent(before)} → ${formatPercent(after)} ` +
    `(${formatPoints(changeOf(figures, scoring))}${ci})`
  );
}

/** The figure of the "Not trained on, weighted to all" row, and what the trained questions show. */
function generalizationHeadline(outcome: VerdictOutcome, g: GeneralizationEstimate, training: TrainingFigures, scoring: Scoring): string {
  const figure = `${formatPoints(g.estimate)} on the questions not trained on, weighted to all (95% CI ${formatPointsRange(g.interval)})`;
  if (outcome === 'improved') return `Improved beyond the trained questions: ${figure}`;
  if (outcome === 'regressed') return `Regressed beyond the trained questions: ${figure}`;
  const trained = training.trainedOn.questions > 0 ? `; ${memorizedFigure(training.trainedOn, scoring)} (memorization)` : '';
  return `No detectable change beyond the trained questions: ${figure}${trained}`;
}

function memorizedHeadline(trained: SubsetFigures, scoring: Scoring): string {
  return `Memorized: ${memorizedFigure(trained, scoring)}; generalization not measured`;
}

/** "35 of 41 trained questions now right" (graded: the mean score on them, before → after). */
function memorizedFigure(trained: SubsetFigures, scoring: Scoring): string {
  if (scoring === 'graded') {
    const before = formatPercent(trained.graded?.meanBefore ?? null);
    const after = formatPercent(trained.graded?.meanAfter ?? null);
    return `mean score on the ${questions(trained.questions, 'trained')} ${before} → ${after}`;
  }
  return `${formatCount(trained.accuracyAfter.count)} of ${questions(trained.questions, 'trained')} now right`;
}

/** What the questions not trained on can show when every one of them was right before: only forgetting. */
export function notTrainedOnNote(training: TrainingFigures, scoring: Scoring): string | null {
  const others = training.notTrainedOn;
  if (training.generalizationMeasured || others.questions === 0) return null;
  const right = scoring === 'graded' ? 'at full marks' : 'right';
  const wrong = scoring === 'graded' ? 'lose marks' : 'break';
  const all = others.questions === 1 ? 'The 1 question not trained on was' : `The ${formatCount(others.questions)} questions not trained on were all`;
  return (
    `${all} ${right} before, so they can only stay ${right} or ${wrong}: that row is a forgetting check ` +
    'and cannot show whether training helps on questions it did not see.'
  );
}

/** Reason for a verdict on the standardized change of the questions not trained on. */
function generalizationSentence(
  outcome: VerdictOutcome,
  g: GeneralizationEstimate,
  total: number,
  training: TrainingFigures,
  scoring: Scoring,
): string {
  const direction = g.estimate === 0 ? 'did not move' : `${g.estimate > 0 ? 'rose' : 'fell'} by ${formatPoints(Math.abs(g.estimate)).replace('+', '')}`;
  const ci = `95% CI ${formatPointsRange(g.interval)}`;
  const fixedWord = scoring === 'graded' ? 'scored higher' : 'were fixed';
  const brokeWord = scoring === 'graded' ? 'scored lower' : 'broke';
  const wrongWord = scoring === 'graded' ? 'below full marks' : 'failed';
  const rightWord = scoring === 'graded' ? 'at full marks' : 'right';
  const strata =
    `${formatCount(g.wrongBefore.moved)} of the ${formatCount(g.wrongBefore.untrained)} ${wrongWord} before and left out of training ${fixedWord} ` +
    `(${formatPercent(g.wrongBefore.rate)}), ${formatCount(g.rightBefore.moved)} of the ${formatCount(g.rightBefore.untrained)} ${rightWord} before ${brokeWord} ` +
    `(${formatPercent(g.rightBefore.rate)})`;
  const head =
    `On the ${questions(training.notTrainedOn.questions)} not trained on, weighted to all ${formatCount(total)} by how they did before, ` +
    `${metricName(scoring)} ${direction} (${ci}): ${strata}`;
  const memo =
    training.trainedOn.questions > 0
      ? `; the ${changeText(training.trainedOn, scoring)} on the ${questions(training.trainedOn.questions, 'trained-on')} is a memorization check`
      : '';
  if (outcome !== 'no_detectable_change') return `${head}${memo}.`;
  return `${head}, so no change was detected${memo}.`;
}

/** Sentence for the training split when generalization could not be judged. */
export function generalizationNote(training: TrainingFigures): string | null {
  if (training.generalizationMeasured) return null;
  const who =
    training.notTrainedOn.questions === 0
      ? 'Every compared question was trained on'
      : 'Every question that failed before was trained on';
  return `${who}, so generalization was not measured; ${HELD_OUT_ADVICE}.`;
}

/** Sentence labelling the trained-on change as a memorization check. */
export function memorizationNote(trainedOn: SubsetFigures, scoring: Scoring): string {
  if (trainedOn.questions === 0) {
    return 'None of the trained-on questions appeared in both runs, so there is no memorization check.';
  }
  const { fixed, broken } = trainedOn.table;
  return (
    `On the ${questions(trainedOn.questions, 'trained-on')} ${metricName(scoring)} ` +
    `${movement(trainedOn, scoring)} (${formatPoints(changeOf(trainedOn, scoring))}; ` +
    `${formatCount(fixed)} fixed vs ${formatCount(broken)} broken): a memorization check, ` +
    'not evidence that training generalizes.'
  );
}

/** Sentence comparing the observed discordance with the flips of a baseline rerun. */
export function noiseNote(noise: Omit<NoiseFloor, 'note'>): string {
  if (noise.questions === 0) {
    return 'The baseline rerun shared no questions with the baseline, so the noise floor is unknown.';
  }
  const verdict = noise.exceedsNoise ? 'more than rerun noise explains' : 'within what rerun noise explains';
  return (
    `A rerun of the baseline flipped ${formatCount(noise.flips.count)} of ${formatCount(noise.questions)} answers ` +
    `(${formatPercent(noise.flips.rate)}, 95% CI ${formatPercent(noise.flips.interval.lower)} to ` +
    `${formatPercent(noise.flips.interval.upper)}); before and after differ on ` +
    `${formatPercent(noise.observedDiscordanceRate)} of questions, ${verdict}.`
  );
}

function memorizationOnlySentence(scoring: Scoring, training: TrainingFigures, hadRerun: boolean): string {
  const trained = training.trainedOn;
  const others = training.notTrainedOn;
  const change = `${metricName(scoring)} on them ${movement(trained, scoring)} (${formatPoints(changeOf(trained, scoring))})`;
  if (others.questions === 0) {
    return (
      `Every compared question was trained on, so the change is a memorization check: ${change}; ` +
      `generalization was not measured, so ${HELD_OUT_ADVICE}.`
    );
  }
  const broke = others.table.broken;
  const noiseClause =
    broke === 0
      ? ''
      : hadRerun
        ? ', no more than a rerun of the baseline breaks by chance'
        : ', which without a rerun of the baseline cannot be told apart from run-to-run noise';
  return (
    `Every question that failed before was trained on, so the change is a memorization check: ${change}, ` +
    `and ${formatCount(broke)} of the ${questions(others.questions, 'other')} broke${noiseClause}; ` +
    `generalization was not measured, so ${HELD_OUT_ADVICE}.`
  );
}

function sentence(
  outcome: VerdictOutcome,
  figures: PairedFigures,
  scoring: Scoring,
  resamples: number,
  scope: string,
  suffix: string,
): string {
  const head = capitalize(`${scope}${metricName(scoring)} ${movement(figures, scoring)} ${intervalText(figures, scoring, resamples)}`);
  const counts = countsText(figures, scoring, outcome);
  if (outcome !== 'no_detectable_change') return `${head}; ${counts}${suffix}.`;
  return `${head}, ${counts}, so no change was detected; ${detectableText(figures, scoring)}${suffix}.`;
}

function metricName(scoring: Scoring): string {
  return scoring === 'graded' ? 'mean score' : 'accuracy';
}

function changeOf(figures: PairedFigures, scoring: Scoring): number | null {
  return scoring === 'graded' ? (figures.graded?.meanChange ?? null) : figures.change.estimate;
}

function changeText(figures: PairedFigures, scoring: Scoring): string {
  return formatPoints(changeOf(figures, scoring));
}

function movement(figures: PairedFigures, scoring: Scoring): string {
  const before = scoring === 'graded' ? (figures.graded?.meanBefore ?? null) : figures.accuracyBefore.rate;
  const after = scoring === 'graded' ? (figures.graded?.meanAfter ?? null) : figures.accuracyAfter.rate;
  const change = changeOf(figures, scoring) ?? 0;
  if (change === 0) return `stayed at ${formatPercent(before)}`;
  return `${change > 0 ? 'rose' : 'fell'} from ${formatPercent(before)} to ${formatPercent(after)}`;
}

function intervalText(figures: PairedFigures, scoring: Scoring, resamples: number): string {
  if (scoring === 'graded') {
    const graded = figures.graded;
    const interval = graded?.interval;
    if (!graded || !interval) return `(${formatPoints(graded?.meanChange ?? null)})`;
    return (
      `(${formatPoints(graded.meanChange)}, 95% bootstrap CI ${formatPointsRange(interval)}, ` +
      `${formatCount(resamples)} resamples)`
    );
  }
  return `(${formatPoints(figures.change.estimate)}, 95% CI ${formatPointsRange(figures.change.interval)})`;
}

function countsText(figures: PairedFigures, scoring: Scoring, outcome: VerdictOutcome): string {
  const { fixed, broken } = figures.table;
  if (scoring === 'graded') {
    const up = figures.graded?.questionsUp ?? 0;
    const down = figures.graded?.questionsDown ?? 0;
    return `scores rose on ${questions(up)} and fell on ${formatCount(down)}`;
  }
  const disagrees =
    outcome === 'no_detectable_change' && figures.mcnemarP < ALPHA ? ' but the 95% CI includes no change' : '';
  return `${questions(fixed)} fixed vs ${formatCount(broken)} broken, McNemar ${formatPClause(figures.mcnemarP)}${disagrees}`;
}

function detectableText(figures: PairedFigures, scoring: Scoring): string {
  let value = figures.detectableChange.value;
  if (scoring === 'graded') {
    const moved = (figures.graded?.questionsUp ?? 0) + (figures.graded?.questionsDown ?? 0);
    if (moved < MIN_MOVED_FOR_GRADED_VERDICT) {
      return `only ${formatCount(moved)} ${moved === 1 ? 'score' : 'scores'} moved, too few to judge a change`;
    }
    value = figures.graded?.detectableChange ?? null;
  }
  if (value === null) {
    return `${questions(figures.questions)} ${figures.questions === 1 ? 'is' : 'are'} too few to detect a change of any size`;
  }
  return `with ${questions(figures.questions)} only a change of about ${magnitude(value)} or more would reliably show`;
}

/** "1 question", "15 questions", "20 trained-on questions". */
function questions(count: number, adjective = ''): string {
  const noun = count === 1 ? 'question' : 'questions';
  return `${formatCount(count)} ${adjective ? `${adjective} ` : ''}${noun}`;
}

function magnitude(value: number): string {
  return `${(value * 100).toFixed(1)} pts`;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
