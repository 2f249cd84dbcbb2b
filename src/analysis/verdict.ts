// The verdict rule and the one-sentence reasons, written from the figures alone.

import {
  formatCount,
  formatPClause,
  formatPercent,
  formatPoints,
  formatPointsRange,
} from './format.js';
import { ALPHA } from './paired-statistics.js';
import type {
  Coverage,
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
}

/**
 * Decides on the questions that measure generalization. Without trained-on ids: all joined
 * questions. With them: the questions not trained on, and the trained-on change is reported only
 * as a memorization check. When every failed question was trained on, no improvement can be
 * claimed: the outcome is `regressed` if the untrained questions got significantly worse (that is
 * forgetting, and real), else `no_detectable_change`, and the reason says generalization was not
 * measured and how to measure it.
 */
export function buildVerdict(
  scoring: Scoring,
  coverage: Coverage,
  overall: SubsetFigures,
  training: TrainingFigures | null,
  resamples: number,
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
    const reason =
      coverage.before + coverage.after === 0
        ? 'Both runs are empty, so nothing could be compared.'
        : `No question appeared in both runs (${formatCount(coverage.onlyBefore.count)} only before, ` +
          `${formatCount(coverage.onlyAfter.count)} only after), so nothing could be compared.`;
    return { ...base, outcome: 'no_detectable_change', reason };
  }

  const outcome = decideOutcome(basisFigures, scoring);
  if (!training) {
    return { ...base, outcome, reason: sentence(outcome, basisFigures, scoring, resamples, '', '') };
  }

  const scope = `On the ${questions(basisFigures.questions)} not trained on, `;
  if (training.generalizationMeasured) {
    const suffix =
      training.trainedOn.questions > 0
        ? `; the ${changeText(training.trainedOn, scoring)} on the ${questions(training.trainedOn.questions, 'trained-on')} is a memorization check`
        : '';
    return { ...base, outcome, reason: sentence(outcome, basisFigures, scoring, resamples, scope, suffix) };
  }

  if (outcome === 'regressed') {
    const suffix = '; every question that failed before was trained on, so generalization was not measured';
    return { ...base, outcome, reason: sentence(outcome, basisFigures, scoring, resamples, scope, suffix) };
  }
  return { ...base, outcome: 'no_detectable_change', reason: memorizationOnlySentence(scoring, training) };
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

function memorizationOnlySentence(scoring: Scoring, training: TrainingFigures): string {
  const trained = training.trainedOn;
  const others = training.notTrainedOn;
  const change = `${metricName(scoring)} on them ${movement(trained, scoring)} (${formatPoints(changeOf(trained, scoring))})`;
  if (others.questions === 0) {
    return (
      `Every compared question was trained on, so the change is a memorization check: ${change}; ` +
      `generalization was not measured, so ${HELD_OUT_ADVICE}.`
    );
  }
  return (
    `Every question that failed before was trained on, so the change is a memorization check: ${change}, ` +
    `and ${formatCount(others.table.broken)} of the ${questions(others.questions, 'other')} broke; ` +
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
