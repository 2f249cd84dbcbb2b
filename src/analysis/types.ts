// Input and output shapes of the run comparison; the output is plain JSON (stored, rendered, summarized).

import type { DetectableChange, Interval, PairCounts } from './paired-statistics.js';

export type { DetectableChange, Interval, PairCounts } from './paired-statistics.js';

export type Scoring = 'exact_match' | 'graded';

/**
 * One question's result in one run. Binary correctness is `correct` when given, else full marks
 * (`score === 1`); a graded score is `score` when given, else 1 or 0 from `correct`.
 */
export interface QuestionOutcome {
  questionId: string;
  category: string;
  correct?: boolean;
  /** Graded score in [0, 1]. */
  score?: number;
}

export interface CompareInput {
  before: readonly QuestionOutcome[];
  after: readonly QuestionOutcome[];
  /** Ids of the questions the model was trained on between the runs. */
  trainedOn?: readonly string[];
  /** Ids of failed questions deliberately left out of training; needs `trainedOn`. */
  heldOut?: readonly string[];
  /** A second run of the "before" model, to measure how many answers flip by chance. */
  baselineRerun?: readonly QuestionOutcome[];
  /** Defaults to 'exact_match'. */
  scoring?: Scoring;
  /** Graded scoring only. Defaults: 10,000 resamples, a fixed seed. */
  bootstrap?: { resamples?: number; seed?: number };
}

export interface Proportion {
  count: number;
  total: number;
  /** count / total; null when total is 0. */
  rate: number | null;
  /** Wilson score interval, 95%. */
  interval: Interval;
}

export interface GradedFigures {
  meanBefore: number | null;
  meanAfter: number | null;
  /** Mean of (after - before) per question; null when there are no questions. */
  meanChange: number | null;
  /** Paired bootstrap 95% percentile interval of the mean change; null where not computed (categories). */
  interval: Interval | null;
  /** Questions whose score rose. */
  questionsUp: number;
  /** Questions whose score fell. */
  questionsDown: number;
  /**
   * (Z_ALPHA + Z_POWER) * sd(differences) / sqrt(n): smallest mean change detected with 80% power.
   * When no score changed, the binary floor of `minimumDetectableChange` with zero discordance; null when n < 2.
   */
  detectableChange: number | null;
}

/** Everything measured on one set of joined questions. */
export interface PairedFigures {
  questions: number;
  table: PairCounts;
  accuracyBefore: Proportion;
  accuracyAfter: Proportion;
  /** After - before accuracy: (fixed - broken) / questions, with Newcombe's paired interval (method 10). */
  change: { estimate: number | null; interval: Interval };
  /** Exact McNemar test (two-sided binomial on fixed vs broken); 1 when nothing changed. */
  mcnemarP: number;
  /** (fixed + broken) / questions; null when there are no questions. */
  discordanceRate: number | null;
  detectableChange: DetectableChange;
  graded: GradedFigures | null;
}

export interface SubsetFigures extends PairedFigures {
  /** Up to 10 fixed question ids, ascending. */
  topFixed: string[];
  /** Up to 10 broken question ids, ascending. */
  topBroken: string[];
}

export interface CategoryFigures extends PairedFigures {
  category: string;
}

export interface IdSample {
  count: number;
  /** Up to 10 of the ids, ascending. */
  sampleIds: string[];
}

export interface Coverage {
  before: number;
  after: number;
  joined: number;
  onlyBefore: IdSample;
  onlyAfter: IdSample;
}

export interface TrainingSplit {
  /** Gains here are a memorization check, not evidence that training helps. */
  trainedOn: SubsetFigures;
  /** Every joined question not trained on. */
  notTrainedOn: SubsetFigures;
  /** Joined questions among the given held-out ids; null when none were given. */
  heldOut: SubsetFigures | null;
  /** Given ids that were not among the joined questions. */
  unmatched: { trainedOn: number; heldOut: number };
  /** True when some question that failed before was not trained on, so generalization could show. */
  generalizationMeasured: boolean;
  /**
   * The change on the questions not trained on, each before-outcome stratum weighted by its share
   * of all joined questions (see `estimateGeneralization`); null when generalization was not measured.
   */
  generalization: GeneralizationEstimate | null;
  memorizationNote: string;
  /** Why generalization could not be judged; null when it could. */
  generalizationNote: string | null;
  /**
   * What the questions not trained on can show when they were all right before (they can only stay
   * right or break: a forgetting check, not generalization); null otherwise.
   */
  notTrainedOnNote: string | null;
}

/** How one before-outcome stratum of the questions not trained on moved. */
export interface StratumMovement {
  /** Members of the stratum not trained on. */
  untrained: number;
  /** Right before: broke (graded: score fell). Wrong before: fixed (graded: score rose). */
  moved: number;
  rate: number;
}

export interface GeneralizationEstimate {
  method: 'stratified_wilson' | 'stratified_normal';
  /** Estimated change in accuracy (graded: mean score) had no question been trained on. */
  estimate: number;
  /** 95% interval. */
  interval: Interval;
  rightBefore: StratumMovement;
  wrongBefore: StratumMovement;
}

export interface NoiseFloor {
  /** Questions present in both the baseline and its rerun. */
  questions: number;
  /** Present in only one of the baseline and its rerun. */
  unmatched: number;
  /** Answers whose correctness differs between the baseline and its rerun. */
  flips: Proportion;
  flipsToRight: number;
  flipsToWrong: number;
  /** Questions right in the baseline that the rerun got wrong, of those right in the baseline. */
  breaks: Proportion;
  /** Share of questions whose correctness differs between before and after (all joined questions). */
  observedDiscordanceRate: number | null;
  /** Observed discordance is above the upper 95% Wilson bound of the rerun's flip rate. */
  exceedsNoise: boolean;
  note: string;
}

/**
 * `memorized`: every question that failed before was trained on, so only memorization (and
 * forgetting) was measured, not whether training helps on questions it did not see.
 */
export type VerdictOutcome = 'improved' | 'regressed' | 'no_detectable_change' | 'memorized';

export interface Verdict {
  outcome: VerdictOutcome;
  /**
   * One line in the user's words: the category and what it was measured on, with the figures the
   * table shows for it (e.g. "Memorized: 35 of 41 trained questions now right; generalization not
   * measured"), so it never reads against the table.
   */
  headline: string;
  /** One plain sentence, built from the figures. */
  reason: string;
  /** The questions the verdict was decided on. */
  basis: 'all_questions' | 'not_trained_on';
  basisQuestions: number;
  /** Null when no trained-on ids were given. */
  generalizationMeasured: boolean | null;
  method: 'exact_mcnemar_and_newcombe' | 'paired_bootstrap' | GeneralizationEstimate['method'] | 'break_rate_vs_rerun';
}

export interface Comparison {
  version: 1;
  scoring: Scoring;
  settings: {
    alpha: number;
    confidence: number;
    power: number;
    bootstrap: { resamples: number; seed: number } | null;
  };
  coverage: Coverage;
  overall: SubsetFigures;
  /** Sorted by category name. */
  categories: CategoryFigures[];
  training: TrainingSplit | null;
  noiseFloor: NoiseFloor | null;
  verdict: Verdict;
}
