// The questions that changed between two runs as a data table people can sort and page through
// (Slack's data_table block), and the same lists as text for where the table is refused.
import { CHANGE_OUTCOMES, formatCount, type ChangeOutcome, type QuestionChanges } from '../../analysis/index.js';
import { SLACK_LIMITS, truncate } from '../limits.js';
import { escapeMrkdwn, truncateMrkdwn } from '../mrkdwn.js';

/** Slack's data table block; @slack/types 3.2 does not have it yet (defined from Slack's docs). */
export interface DataTableBlock {
  type: 'data_table';
  caption: string;
  rows: Array<Array<{ type: 'raw_text'; text: string }>>;
  page_size?: number;
  row_header_column_index?: number;
  block_id?: string;
}

export const OUTCOME_LABELS: Record<ChangeOutcome, string> = { fixed: 'Fixed', broken: 'Broken', still_wrong: 'Still wrong' };
const HEADER = ['Outcome', 'Category', 'Question', 'Expected', 'Before', 'After'];
export const QUESTION_TABLE_PAGE_SIZE = 10;

/** Cell widths tried from the roomiest down: the question column, then every answer column. */
const WIDTHS: ReadonlyArray<readonly [number, number]> = [
  [90, 40],
  [70, 30],
  [56, 24],
  [44, 18],
  [36, 14],
  [28, 10],
];

/** A cell from text the bot did not write: one line, escaped like every such text in a post (src/slack/mrkdwn.ts), cut to `max`. */
const cellText = (text: string, max: number) => {
  const flat = escapeMrkdwn(text.replace(/\s+/g, ' ').trim());
  return truncate(flat === '' ? '–' : flat, max);
};

/**
 * How many rows each outcome gets out of `rows` (a "+N more" row included where some are cut): shared
 * round-robin, so broken questions are not crowded out by many fixed ones.
 */
function allocate(changes: QuestionChanges, rows: number): Record<ChangeOutcome, number> {
  const shown: Record<ChangeOutcome, number> = { fixed: 0, broken: 0, still_wrong: 0 };
  const present = CHANGE_OUTCOMES.filter((o) => changes[o].count > 0);
  // Each outcome not shown whole takes one more row for its "+N more".
  let total = present.length;
  for (let progress = true; progress; ) {
    progress = false;
    for (const o of present) {
      if (shown[o] >= changes[o].items.length) continue;
      const delta = shown[o] + 1 === changes[o].count ? 0 : 1;
      if (total + delta > rows) continue;
      shown[o] += 1;
      total += delta;
      progress = true;
    }
  }
  return shown;
}

function buildRows(changes: QuestionChanges, dataRows: number, width: readonly [number, number]): string[][] {
  const [questionWidth, textWidth] = width;
  const shown = allocate(changes, dataRows);
  const rows: string[][] = [HEADER];
  for (const o of CHANGE_OUTCOMES) {
    const list = changes[o];
    if (list.count === 0) continue;
    for (const q of list.items.slice(0, shown[o])) {
      rows.push([OUTCOME_LABELS[o], cellText(q.category, textWidth), cellText(q.question, questionWidth), cellText(q.expected, textWidth), cellText(q.before, textWidth), cellText(q.after, textWidth)]);
    }
    const more = list.count - shown[o];
    if (more > 0) rows.push([OUTCOME_LABELS[o], '–', `+${formatCount(more)} more ${OUTCOME_LABELS[o].toLowerCase()}`, '–', '–', '–']);
  }
  return rows;
}

const charsOf = (rows: string[][]) => rows.reduce((sum, row) => sum + row.reduce((s, c) => s + c.length, 0), 0);

/** "35 fixed, 3 broken, 6 still wrong" */
export function changesSummary(changes: QuestionChanges): string {
  return CHANGE_OUTCOMES.map((o) => `${formatCount(changes[o].count)} ${OUTCOME_LABELS[o].toLowerCase()}`).join(', ');
}

/**
 * The data table of the questions that changed: at most 100 rows, `QUESTION_TABLE_PAGE_SIZE` a page,
 * every outcome cut with "+N more", cells narrowed (then rows dropped) until all cells fit in
 * `charBudget`. Null when no question changed or was wrong.
 */
export function buildQuestionTable(changes: QuestionChanges, charBudget: number = SLACK_LIMITS.dataTableMessageChars): DataTableBlock | null {
  if (CHANGE_OUTCOMES.every((o) => changes[o].count === 0)) return null;
  let chosen: string[][] | null = null;
  for (let dataRows: number = SLACK_LIMITS.dataTableRows; dataRows >= 1 && !chosen; dataRows = dataRows > 10 ? dataRows - 10 : dataRows - 1) {
    for (const width of WIDTHS) {
      const rows = buildRows(changes, dataRows, width);
      if (charsOf(rows) <= charBudget) {
        chosen = rows;
        break;
      }
    }
  }
  if (!chosen || chosen.length < 2) return null;
  return {
    type: 'data_table',
    caption: `Questions that changed: ${changesSummary(changes)}`,
    page_size: QUESTION_TABLE_PAGE_SIZE,
    row_header_column_index: 2,
    rows: chosen.map((row) => row.map((text) => ({ type: 'raw_text' as const, text }))),
  };
}

/** The same questions as text, for a message whose data table Slack refused: a few of each outcome, "+N more". */
export function questionChangesText(changes: QuestionChanges, max: number = SLACK_LIMITS.sectionText): string | null {
  if (CHANGE_OUTCOMES.every((o) => changes[o].count === 0)) return null;
  const perOutcome = 5;
  const parts: string[] = [`*Questions that changed:* ${changesSummary(changes)}`];
  for (const o of CHANGE_OUTCOMES) {
    const list = changes[o];
    if (list.count === 0) continue;
    const lines = list.items.slice(0, perOutcome).map(
      (q) => `• ${cellText(q.question, 80)} (${cellText(q.category, 24)}): expected ${cellText(q.expected, 30)}; before ${cellText(q.before, 30)}, after ${cellText(q.after, 30)}`,
    );
    const more = list.count - lines.length;
    parts.push(`*${OUTCOME_LABELS[o]}*\n${lines.join('\n')}${more > 0 ? `\n+${formatCount(more)} more` : ''}`);
  }
  return truncateMrkdwn(parts.join('\n'), max);
}
