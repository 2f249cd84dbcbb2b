import { describe, expect, it } from 'vitest';
import { questionChanges, type QuestionAnswer } from '../../src/analysis/index.js';

function answer(id: string, right: boolean, extra: Partial<QuestionAnswer> = {}): QuestionAnswer {
  return { questionId: id, category: 'math', question: `What is ${id}?`, expectedAnswer: `A-${id}`, modelAnswer: right ? `A-${id}` : `wrong-${id}`, correct: right, score: right ? 1 : 0, ...extra };
}

describe('questionChanges', () => {
  it('sorts the joined questions into fixed, broken and still wrong, with both answers', () => {
    const before = [answer('q1', false), answer('q2', true), answer('q3', false), answer('q4', true)];
    const after = [answer('q4', true), answer('q3', false, { modelAnswer: 'other' }), answer('q2', false), answer('q1', true)];
    const changes = questionChanges(before, after);
    expect(changes.fixed).toEqual({ count: 1, items: [{ questionId: 'q1', category: 'math', question: 'What is q1?', expected: 'A-q1', before: 'wrong-q1', after: 'A-q1' }] });
    expect(changes.broken.items.map((q) => [q.questionId, q.before, q.after])).toEqual([['q2', 'A-q2', 'wrong-q2']]);
    expect(changes.still_wrong.items.map((q) => [q.questionId, q.before, q.after])).toEqual([['q3', 'wrong-q3', 'other']]);
  });

  it('marks an answer cut by the token budget and shows an error answer as such', () => {
    const before = [answer('q1', false, { modelAnswer: 'Once upon a time there was', truncated: true }), answer('q2', true)];
    const after = [answer('q1', false, { modelAnswer: '', error: 'the database could not store the answer: boom' }), answer('q2', false, { modelAnswer: 'x'.repeat(500), truncated: true })];
    const changes = questionChanges(before, after);
    expect(changes.still_wrong.items[0]).toMatchObject({ before: 'Once upon a time there was [cut by the token budget]', after: '[error: the database could not store the answer: boom]' });
    expect(changes.broken.items[0]!.after).toMatch(/^x+… \[cut by the token budget\]$/);
  });

  it('leaves out questions in only one run and counts a duplicate id once', () => {
    const changes = questionChanges([answer('q1', false), answer('q2', false)], [answer('q1', true), answer('q1', false), answer('q9', true)]);
    expect(changes.fixed.count).toBe(1);
    expect(changes.still_wrong.count).toBe(0);
  });

  it('graded results count as right at full marks when correct is null', () => {
    const g = (id: string, score: number) => answer(id, score >= 1, { correct: null, score });
    const changes = questionChanges([g('a', 0.5), g('b', 1), g('c', 0.2)], [g('a', 1), g('b', 0.9), g('c', 0.6)]);
    expect([changes.fixed.count, changes.broken.count, changes.still_wrong.count]).toEqual([1, 1, 1]);
  });

  it('bounds each list (counts stay whole), orders by category then id numerically, and cuts long text', () => {
    const before: QuestionAnswer[] = [];
    const after: QuestionAnswer[] = [];
    for (let i = 2000; i >= 1; i -= 1) {
      before.push(answer(`q${i}`, false, { category: i % 2 ? 'b' : 'a', question: 'x'.repeat(1000) }));
      after.push(answer(`q${i}`, i % 3 === 0));
    }
    const changes = questionChanges(before, after);
    expect(changes.fixed.count).toBe(666);
    expect(changes.still_wrong.count).toBe(1334);
    expect(changes.fixed.items).toHaveLength(100);
    expect(changes.fixed.items.slice(0, 3).map((q) => q.questionId)).toEqual(['q6', 'q12', 'q18']);
    expect(changes.fixed.items.every((q) => q.category === 'a')).toBe(true);
    expect(changes.fixed.items[0]!.question.length).toBe(300);
  });
});
