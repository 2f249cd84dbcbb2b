// Joins two runs question by question, by question id.

import { AnalysisError } from './errors.js';

export interface Identified {
  questionId: string;
}

export interface Join {
  /** For each question of the second run, the position of the question with its id in the first run, or -1. */
  matches: Int32Array;
  /** Positions in the first run of the questions the second run does not have. */
  onlyBefore: number[];
}

function duplicateError(id: string, run: string): AnalysisError {
  return new AnalysisError('duplicate_question', `Question ${id} appears more than once in the ${run} run.`);
}

/** Each question's position in its run, by id. Throws AnalysisError('duplicate_question') for an id the run holds twice. */
export function indexById(run: readonly Identified[], name: string): Map<string, number> {
  const positions = new Map<string, number>();
  for (let i = 0; i < run.length; i++) {
    const id = run[i]!.questionId;
    if (positions.has(id)) throw duplicateError(id, name);
    positions.set(id, i);
  }
  return positions;
}

/**
 * Matches each question of `after` with the question of `before` (indexed by `indexById`) that has
 * its id. Throws AnalysisError('duplicate_question') when an id occurs twice in `after`.
 */
export function joinById(before: readonly Identified[], beforeIndex: Map<string, number>, after: readonly Identified[], afterName: string): Join {
  const matches = new Int32Array(after.length);
  const matched = new Uint8Array(before.length);
  const unmatchedIds = new Set<string>();
  for (let j = 0; j < after.length; j++) {
    const id = after[j]!.questionId;
    const i = beforeIndex.get(id);
    if (i === undefined) {
      if (unmatchedIds.has(id)) throw duplicateError(id, afterName);
      unmatchedIds.add(id);
      matches[j] = -1;
    } else {
      if (matched[i] === 1) throw duplicateError(id, afterName);
      matched[i] = 1;
      matches[j] = i;
    }
  }
  const onlyBefore: number[] = [];
  for (let i = 0; i < before.length; i++) if (matched[i] === 0) onlyBefore.push(i);
  return { matches, onlyBefore };
}
