// The questions that changed as Slack's data table: within every documented limit on a 2,000-question
// benchmark, "+N more" per outcome, and the text shown where the table is refused.
import { describe, expect, it } from 'vitest';
import { compareRuns, questionChanges, type QuestionAnswer } from '../../src/analysis/index.js';
import type { ComparisonPart } from '../../src/agent/reply.js';
import { buildQuestionTable, questionChangesText, QUESTION_TABLE_PAGE_SIZE } from '../../src/slack/blocks/question-table.js';
import { renderReply } from '../../src/slack/blocks/reply.js';
import { validateBlocks } from '../kit/fakes/slack/index.js';

/** A 2,000-question benchmark in 7 categories with long questions and answers; training fixes about half the failures. */
function benchmark(n = 2000) {
  const before: QuestionAnswer[] = [];
  const after: QuestionAnswer[] = [];
  for (let i = 0; i < n; i += 1) {
    const wasRight = i % 5 < 2;
    const isRight = wasRight ? i % 6 !== 0 : i % 2 === 0;
    const base = { questionId: `q${i}`, category: `category-${i % 7}-with-a-long-name`, question: `Question ${i}: ${'why is the sky blue and not green '.repeat(8)}`, expectedAnswer: `expected answer ${i} `.repeat(6), score: 0 };
    before.push({ ...base, modelAnswer: wasRight ? base.expectedAnswer : `a wrong answer ${i} `.repeat(5), correct: wasRight, score: wasRight ? 1 : 0 });
    after.push({ ...base, modelAnswer: isRight ? base.expectedAnswer : `another wrong answer ${i} `.repeat(5), correct: isRight, score: isRight ? 1 : 0 });
  }
  return { before, after };
}

function part(runs: ReturnType<typeof benchmark>): ComparisonPart {
  const toOutcome = (q: QuestionAnswer) => ({ questionId: q.questionId, category: q.category, correct: q.correct! });
  return {
    kind: 'comparison',
    comparison: compareRuns({ before: runs.before.map(toOutcome), after: runs.after.map(toOutcome) }),
    before: { runId: 'r1', modelId: 'base' },
    after: { runId: 'r2', modelId: 'ft' },
    cost: { costs: [], agentUsd: 0.01, elapsedMs: 1000 },
    questions: questionChanges(runs.before, runs.after),
  };
}

const cells = (table: { rows: Array<Array<{ text: string }>> }) => table.rows.flat().reduce((n, c) => n + c.text.length, 0);

describe('question table', () => {
  it('a 2,000-question comparison: the data table is in the message, within every limit Slack documents', () => {
    const p = part(benchmark());
    const q = p.questions!;
    expect([q.fixed.count, q.broken.count, q.still_wrong.count].every((n) => n > 100)).toBe(true);
    const message = renderReply({ to: 'UOWNER', text: 'Compared.', parts: [p] });
    expect(validateBlocks(message.blocks, 'message')).toEqual([]);
    const table = message.blocks.find((b) => (b.type as string) === 'data_table') as unknown as { rows: Array<Array<{ text: string }>>; page_size: number; caption: string };
    expect(table).toBeDefined();
    expect(table.rows.length).toBeGreaterThan(10);
    expect(table.rows.length).toBeLessThanOrEqual(101);
    expect(table.page_size).toBe(QUESTION_TABLE_PAGE_SIZE);
    expect(table.caption).toContain(`${q.fixed.count.toLocaleString('en-US')} fixed`);
    // It comes before the cost line, after the summary table.
    const types = message.blocks.map((b) => b.type as string);
    expect(types.indexOf('table')).toBeLessThan(types.indexOf('data_table'));
    expect(message.blocks[types.indexOf('data_table') + 1]).toMatchObject({ type: 'section', text: { text: expect.stringContaining('*Total:*') } });
    // Every outcome is there, each cut with "+N more" whose N adds up with the rows shown.
    for (const [label, list] of [['Fixed', q.fixed], ['Broken', q.broken], ['Still wrong', q.still_wrong]] as const) {
      const rows = table.rows.filter((r) => r[0]!.text === label);
      const more = rows.find((r) => r[2]!.text.startsWith('+'));
      expect(more, label).toBeDefined();
      const hidden = Number(more![2]!.text.replace(/[^0-9]/g, ''));
      expect(rows.length - 1 + hidden).toBe(list.count);
    }
    // The summary table and the data table share the message's 10,000 characters of cells.
    const summary = message.blocks.find((b) => b.type === 'table') as unknown as { rows: Array<Array<{ text: string }>> };
    expect(cells(table) + cells(summary)).toBeLessThanOrEqual(10_000);
  });

  it('a small comparison shows every changed question, without "+N more"', () => {
    const runs = benchmark(40);
    const table = buildQuestionTable(questionChanges(runs.before, runs.after))!;
    const q = questionChanges(runs.before, runs.after);
    expect(table.rows).toHaveLength(1 + q.fixed.count + q.broken.count + q.still_wrong.count);
    expect(table.rows.some((r) => r[2]!.text.startsWith('+'))).toBe(false);
  });

  it('a tight character budget narrows cells, then drops rows, and stays valid', () => {
    const runs = benchmark();
    const table = buildQuestionTable(questionChanges(runs.before, runs.after), 3000)!;
    expect(cells(table)).toBeLessThanOrEqual(3000);
    expect(validateBlocks([table], 'message')).toEqual([]);
  });

  it('no changed or wrong question: no table and no text', () => {
    const empty = { fixed: { count: 0, items: [] }, broken: { count: 0, items: [] }, still_wrong: { count: 0, items: [] } };
    expect(buildQuestionTable(empty)).toBeNull();
    expect(questionChangesText(empty)).toBeNull();
  });

  it('as text: a few questions per outcome with "+N more", escaped, within a section', () => {
    const runs = benchmark();
    runs.before[1]!.question = '<!channel> *bold* question';
    runs.before[1]!.correct = false;
    const text = questionChangesText(questionChanges(runs.before, runs.after))!;
    expect(text.length).toBeLessThanOrEqual(3000);
    expect(text).toMatch(/\*Broken\*/);
    expect(text).toMatch(/\+[\d,]+ more/);
    expect(text).not.toContain('<!channel>');
  });

  it('the fallback levels: the questions as text with the summary table, then no table at all, then no blocks', () => {
    const p = part(benchmark());
    const reply = { to: 'UOWNER', text: 'Compared.', parts: [p] };
    const types = (level: 'questions_as_text' | 'all_text' | 'plain') => renderReply(reply, { level }).blocks.map((b) => b.type as string);
    expect(types('questions_as_text')).toContain('table');
    expect(types('questions_as_text')).not.toContain('data_table');
    expect(renderReply(reply, { level: 'questions_as_text' }).blocks.some((b) => JSON.stringify(b).includes('Questions that changed'))).toBe(true);
    expect(types('all_text').filter((t) => t === 'table' || t === 'data_table')).toEqual([]);
    expect(types('plain')).toEqual([]);
    for (const level of ['questions_as_text', 'all_text'] as const) expect(validateBlocks(renderReply(reply, { level }).blocks, 'message')).toEqual([]);
  });
});
