// Coded errors for input the comparison cannot honestly analyse.

export type AnalysisErrorCode =
  | 'duplicate_question'
  | 'missing_outcome'
  | 'invalid_score'
  | 'trained_and_held_out'
  | 'invalid_option';

export class AnalysisError extends Error {
  override readonly name = 'AnalysisError';

  constructor(
    readonly code: AnalysisErrorCode,
    message: string,
  ) {
    super(message);
  }
}
