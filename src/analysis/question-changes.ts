// Which questions changed between two runs: fixed (wrong -> right), broken (right -> wrong) and
// still wrong, with their text, expected answer and both answers. Pure; the lists are bounded.

/** One question of one run, as the platform reports it (the fields the table shows). */
export interface QuestionAnswer {
  questionId: string;
  category: string;
  question: string;
  expectedAnswer: string;
  modelAnswer: string;
  correct: boolean | null;
  score: number;
  /** The answer was cut by the token budget (runs on a real engine). */
  truncated?: boolean;
  /** Why the question has an error answer instead of the model's (runs on a real engine). */
  error?: string | null;
}

export type ChangeOutcome = 'fixed' | 'broken' | 'still_wrong';

export interface QuestionChange {
  questionId: string;
  category: string;
  question: string;
  expected: string;
  before: string;
  after: string;
}

export interface ChangeList {
  /** How many questions have this outcome. */
  count: number;
  /** The first of them by category then question id, at most `maxPerOutcome`. */
  items: QuestionChange[];
}

export type QuestionChanges = Record<ChangeOutcome, ChangeList>;

export const CHANGE_OUTCOMES: readonly ChangeOutcome[] = ['fixed', 'broken', 'still_wrong'];

/** Kept per outcome: more than one table can show (Slack's data table holds 100 rows). */
export const MAX_CHANGES_PER_OUTCOME = 100;
/** Each stored text is cut to this many characters: the table shows fewer, and the outbox stays small. */
export const MAX_CHANGE_TEXT = 300;

/** Right as the comparison counts it: `correct` when given, else full marks. */
function isRight(q: QuestionAnswer): boolean {
  return q.correct ?? q.score >= 1;
}

const cut = (text: string) => (text.length <= MAX_CHANGE_TEXT ? text : `${text.slice(0, MAX_CHANGE_TEXT - 1)}…`);

/** The answer as the table shows it: an error answer says so; a cut answer is marked (the mark always fits). */
function shownAnswer(q: QuestionAnswer): string {
  if (q.error) return cut(`[error: ${q.error}]`);
  if (!q.truncated) return cut(q.modelAnswer);
  const mark = ' [cut by the token budget]';
  const room = MAX_CHANGE_TEXT - mark.length;
  const answer = q.modelAnswer.length <= room ? q.modelAnswer : `${q.modelAnswer.slice(0, room - 1)}…`;
  return `${answer}${mark}`;
}
const byCategoryThenId = new Intl.Collator('en', { numeric: true });

/**
 * Joins two runs by question id and lists the questions fixed, broken and still wrong. Questions in
 * only one run are left out (the comparison reports them). A duplicate id keeps its first answer.
 */
export function questionChanges(
  before: readonly QuestionAnswer[],
  after: readonly QuestionAnswer[],
  maxPerOutcome: number = MAX_CHANGES_PER_OUTCOME,
): QuestionChanges {
  const first = new Map<string, QuestionAnswer>();
  for (const q of before) if (!first.has(q.questionId)) first.set(q.questionId, q);
  const lists: Record<ChangeOutcome, QuestionChange[]> = { fixed: [], broken: [], still_wrong: [] };
  const seen = new Set<string>();
  for (const a of after) {
    const b = first.get(a.questionId);
    if (!b || seen.has(a.questionId)) continue;
    seen.add(a.questionId);
    const wasRight = isRight(b);
    const isNowRight = isRight(a);
    const outcome: ChangeOutcome | null = !wasRight && isNowRight ? 'fixed' : wasRight && !isNowRight ? 'broken' : !wasRight ? 'still_wrong' : null;
    if (!outcome) continue;
    lists[outcome].push({
      questionId: a.questionId,
      category: b.category,
      question: cut(b.question),
      expected: cut(b.expectedAnswer),
      before: shownAnswer(b),
      after: shownAnswer(a),
    });
  }
  const order = (x: QuestionChange, y: QuestionChange) => byCategoryThenId.compare(x.category, y.category) || byCategoryThenId.compare(x.questionId, y.questionId);
  const listOf = (items: QuestionChange[]): ChangeList => ({ count: items.length, items: items.sort(order).slice(0, Math.max(0, maxPerOutcome)) });
  return { fixed: listOf(lists.fixed), broken: listOf(lists.broken), still_wrong: listOf(lists.still_wrong) };
}
