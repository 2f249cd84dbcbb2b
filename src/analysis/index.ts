// Public surface of the analysis module: the comparison, its types, errors and number formatting.

export { compareRuns } from './compare.js';
export { AnalysisError, type AnalysisErrorCode } from './errors.js';
export {
  formatCount,
  formatPClause,
  formatPercent,
  formatPoints,
  formatPointsRange,
  formatPValue,
  formatSignedPoints,
} from './format.js';
export {
  ALPHA,
  POWER,
  mcnemarExactPValue,
  minimumDetectableChange,
  newcombePairedInterval,
  wilsonInterval,
} from './paired-statistics.js';
export { bootstrapMeanInterval, DEFAULT_RESAMPLES, DEFAULT_SEED } from './bootstrap.js';
export { MIN_MOVED_FOR_GRADED_VERDICT } from './verdict.js';
export type * from './types.js';
export {
  CHANGE_OUTCOMES,
  MAX_CHANGES_PER_OUTCOME,
  questionChanges,
  type ChangeList,
  type ChangeOutcome,
  type QuestionAnswer,
  type QuestionChange,
  type QuestionChanges,
} from './question-changes.js';
