// The simulated model: per-question outcomes from ability, difficulty, run noise and LoRA training; pure and seeded.
import { FAILED_SCORE_THRESHOLD, type QuestionResultWire } from '@verdict/contract/contract';
import { gradedAnswer, questionAt, wrongAnswer, type BenchmarkDefinition, type Question } from './catalogue.js';
import { normal, sigmoid, unit } from './random.js';

/** How a model came to be: a base model, or a LoRA fine-tune of a parent on a set of questions. */
export type ModelLineage =
  | { kind: 'base'; id: string; ability: number }
  | {
      kind: 'fine_tuned';
      id: string;
      parent: ModelLineage;
      trainedQuestionIds: ReadonlySet<string>;
      /** Probability that a wrong trained-on question becomes right. */
      memorization: number;
      /** Probability that a right question not trained on becomes wrong. */
      forgetting: number;
      /** Probability that a wrong question not trained on becomes right (the true effect). */
      generalization: number;
    };

export interface SimulationSettings {
  /** Expected fraction of questions whose outcome differs between two runs of the same model. */
  rerunFlipRate: number;
  forgettingRate: number;
  generalizationRate: number;
}

export const DEFAULT_SIMULATION: SimulationSettings = {
  rerunFlipRate: 0.03,
  forgettingRate: 0.025,
  generalizationRate: 0,
};

export interface RunNoise {
  runId: string;
  rerunFlipRate: number;
}

/** Probability that training fixes a wrong trained-on question: 1 - 0.5^(augmentation / 1.5). */
export function memorizationProbability(augmentation: number): number {
  return 1 - 0.5 ** (augmentation / 1.5);
}

/**
 * Per-run flip probability q such that two independent runs disagree on a question with
 * probability 2q(1-q) = rerunFlipRate.
 */
export function perRunFlipProbability(rerunFlipRate: number): number {
  const rate = Math.min(Math.max(rerunFlipRate, 0), 0.5);
  return (1 - Math.sqrt(1 - 2 * rate)) / 2;
}

function rootOf(lineage: ModelLineage): { id: string; ability: number } {
  let current = lineage;
  while (current.kind === 'fine_tuned') current = current.parent;
  return current;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/** The model's noiseless score on a question: 0 or 1 for exact_match, 0..1 for graded. */
export function trueScore(seed: number, benchmark: BenchmarkDefinition, question: Question, lineage: ModelLineage): number {
  const graded = benchmark.scoring === 'graded';
  if (lineage.kind === 'base') {
    const z = lineage.ability - question.difficulty + 0.8 * normal(seed, 'latent', lineage.id, question.id);
    if (graded) return round2(sigmoid(1.3 * z));
    return unit(seed, 'answer', lineage.id, question.id) < sigmoid(z) ? 1 : 0;
  }
  const parent = trueScore(seed, benchmark, question, lineage.parent);
  const u = unit(seed, 'tune', lineage.id, question.id);
  const v = unit(seed, 'tune-level', lineage.id, question.id);
  const trained = lineage.trainedQuestionIds.has(question.id);
  if (!graded) {
    if (trained) return parent === 1 || u < lineage.memorization ? 1 : 0;
    if (parent === 1) return u < lineage.forgetting ? 0 : 1;
    return u < lineage.generalization ? 1 : 0;
  }
  if (trained) return u < lineage.memorization ? Math.max(parent, round2(0.85 + 0.15 * v)) : parent;
  if (parent >= FAILED_SCORE_THRESHOLD && u < lineage.forgetting) return round2(parent * 0.4);
  if (parent < FAILED_SCORE_THRESHOLD && u < lineage.generalization) return Math.max(parent, round2(0.6 + 0.4 * v));
  return parent;
}

/** The score a given run observed: the true score, flipped (or jittered, if graded) by that run's sampling noise. */
export function runScore(
  seed: number,
  benchmark: BenchmarkDefinition,
  question: Question,
  lineage: ModelLineage,
  noise: RunNoise,
): number {
  const truth = trueScore(seed, benchmark, question, lineage);
  const flip = unit(seed, 'noise', noise.runId, question.id) < perRunFlipProbability(noise.rerunFlipRate);
  if (!flip) return truth;
  if (benchmark.scoring === 'exact_match') return 1 - truth;
  const magnitude = 0.1 + 0.3 * unit(seed, 'jitter', noise.runId, question.id);
  const sign = unit(seed, 'jitter-sign', noise.runId, question.id) < 0.5 ? -1 : 1;
  const moved = round2(clamp01(truth + sign * magnitude));
  return moved === truth ? round2(clamp01(truth - sign * magnitude)) : moved;
}

/** The wire form of one question's result in a run. */
export function questionResult(
  seed: number,
  benchmark: BenchmarkDefinition,
  index: number,
  lineage: ModelLineage,
  noise: RunNoise,
): QuestionResultWire {
  const question = questionAt(seed, benchmark, index);
  const score = runScore(seed, benchmark, question, lineage, noise);
  const exact = benchmark.scoring === 'exact_match';
  const modelAnswer = exact
    ? score === 1
      ? question.expectedAnswer
      : wrongAnswer(seed, benchmark, question, rootOf(lineage).id)
    : gradedAnswer(question, score);
  return {
    question_id: question.id,
    category: question.category,
    question: question.text,
    expected_answer: question.expectedAnswer,
    model_answer: modelAnswer,
    correct: exact ? score === 1 : null,
    score,
  };
}

export interface RunSummary {
  score: number;
  categoryScores: Array<{ category: string; score: number; question_count: number }>;
  /** Question ids scoring below the failure threshold, in benchmark order. */
  failedQuestionIds: string[];
  scores: number[];
}

/** Scores a whole run: overall mean, per-category means (4 decimals) and the failed questions. */
export function summarizeRun(
  seed: number,
  benchmark: BenchmarkDefinition,
  lineage: ModelLineage,
  noise: RunNoise,
): RunSummary {
  const totals = new Map<string, { sum: number; n: number }>();
  const failed: string[] = [];
  const scores: number[] = [];
  let sum = 0;
  for (let index = 0; index < benchmark.questionCount; index++) {
    const question = questionAt(seed, benchmark, index);
    const score = runScore(seed, benchmark, question, lineage, noise);
    scores.push(score);
    sum += score;
    if (score < FAILED_SCORE_THRESHOLD) failed.push(question.id);
    const t = totals.get(question.category) ?? { sum: 0, n: 0 };
    t.sum += score;
    t.n += 1;
    totals.set(question.category, t);
  }
  const round4 = (x: number) => Math.round(x * 10_000) / 10_000;
  return {
    score: round4(sum / Math.max(1, benchmark.questionCount)),
    categoryScores: benchmark.categories.map((c) => {
      const t = totals.get(c.name) ?? { sum: 0, n: 0 };
      return { category: c.name, score: round4(t.sum / Math.max(1, t.n)), question_count: t.n };
    }),
    failedQuestionIds: failed,
    scores,
  };
}

/**
 * Splits a run's failed questions into trained-on and held-out: a seeded shuffle keyed by run and
 * question, `round(fraction * n)` held out. Both lists keep benchmark order.
 */
export function splitFailures(
  failedQuestionIds: readonly string[],
  heldOutFraction: number,
  seed: number,
  runId: string,
): { trained: string[]; heldOut: string[] } {
  const heldOutCount = Math.round(heldOutFraction * failedQuestionIds.length);
  const shuffled = [...failedQuestionIds].sort(
    (a, b) => unit(seed, 'split', runId, a) - unit(seed, 'split', runId, b) || a.localeCompare(b),
  );
  const heldOut = new Set(shuffled.slice(0, heldOutCount));
  return {
    trained: failedQuestionIds.filter((id) => !heldOut.has(id)),
    heldOut: failedQuestionIds.filter((id) => heldOut.has(id)),
  };
}
