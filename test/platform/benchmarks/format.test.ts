// Benchmark files: accepted whole or refused whole with each bad line and field named; scorers; prompt variants.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  PROMPT_VARIANTS,
  formatBenchmarkErrors,
  loadBenchmarksDir,
  parseBenchmarkJsonl,
  renderPrompt,
  scoreAnswer,
  type BenchmarkItem,
} from '@verdict/platform/benchmarks/index';

const lines = (...objects: unknown[]) => objects.map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n');

describe('parseBenchmarkJsonl', () => {
  it('accepts a good file with every optional field, skipping blank lines', () => {
    const text = lines(
      { id: 'q1', question: 'Once upon a time, there was a little girl named', answer: 'Lily', category: 'names', max_tokens: 8 },
      '',
      { id: 2, question: 'What is 6 x 7?', answer: 42, scorer: 'numeric' },
      { id: 'q3', question: 'Which is a fruit?', choices: ['Rock', 'Apple'], answer: 'b' },
      { id: 'q4', question: 'Name a colour', answer: 'red|blue', scorer: 'regex' },
      { id: 'q5', question: 'Where do fish live?', answer: 'water', scorer: 'contains' },
    ) + '\n';
    const parsed = parseBenchmarkJsonl(text, 'stories');
    expect(parsed).toEqual({
      ok: true,
      items: [
        { id: 'q1', question: 'Once upon a time, there was a little girl named', answer: 'Lily', category: 'names', max_tokens: 8 },
        { id: '2', question: 'What is 6 x 7?', answer: '42', scorer: 'numeric' },
        { id: 'q3', question: 'Which is a fruit?', choices: ['Rock', 'Apple'], answer: 'B' },
        { id: 'q4', question: 'Name a colour', answer: 'red|blue', scorer: 'regex' },
        { id: 'q5', question: 'Where do fish live?', answer: 'water', scorer: 'contains' },
      ],
      format: { id: 'ours', name: 'our benchmark format', mapping: [] },
    });
  });

  it('refuses a bad file whole, naming each bad line and field', () => {
    const text = lines(
      { id: 'a', question: 'fine', answer: 'yes' },
      '{"id": "b", "question": "broken"',
      { id: 'c', answer: 'no question' },
      { id: 'a', question: 'dup', answer: 'x' },
      { id: 'd', question: 'q', answer: 'x', scorer: 'fuzzy' },
      { id: 'e', question: 'q', answer: 'E', choices: ['one', 'two'] },
      { id: 'f', question: 'q', answer: 'many', scorer: 'numeric' },
      { id: 'g', question: 'q', answer: '(unclosed', scorer: 'regex' },
      { id: 'h', question: 'q', answer: 'x', max_tokens: 0, anwser: 'typo' },
      ['not', 'an', 'object'],
      { id: 'i', question: '', answer: 'x', choices: ['only one'] },
    );
    const parsed = parseBenchmarkJsonl(text, 'bad');
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    const byLine = (line: number) => parsed.errors.filter((e) => e.line === line).map((e) => e.field ?? null);
    expect(parsed.errors.some((e) => e.line === 1)).toBe(false);
    expect(byLine(2)).toEqual([null]);
    expect(parsed.errors.find((e) => e.line === 2)!.message).toMatch(/not valid JSON/);
    expect(byLine(3)).toEqual(['question']);
    expect(byLine(4)).toEqual(['id']);
    expect(parsed.errors.find((e) => e.line === 4)!.message).toBe('duplicate id "a" (first on line 1)');
    expect(byLine(5)).toEqual(['scorer']);
    expect(byLine(6)).toEqual(['answer']);
    expect(parsed.errors.find((e) => e.line === 6)!.message).toMatch(/past the 2 choices/);
    expect(byLine(7)).toEqual(['answer']);
    expect(byLine(8)).toEqual(['answer']);
    expect(byLine(9).sort()).toEqual(['anwser', 'max_tokens']);
    expect(byLine(10)).toEqual([null]);
    expect(byLine(11).sort()).toEqual(['choices', 'question']);
    expect(formatBenchmarkErrors(parsed.errors)).toContain('line 5, field scorer: unknown scorer "fuzzy" (one of: exact, numeric, choice, contains, regex)');
  });

  it('refuses an empty file and a bad benchmark id', () => {
    expect(parseBenchmarkJsonl('\n  \n', 'empty')).toMatchObject({ ok: false, errors: [{ line: 0, message: expect.stringMatching(/no questions/) }] });
    const bad = parseBenchmarkJsonl(lines({ id: 'a', question: 'q', answer: 'x' }), '../etc');
    expect(bad.ok === false && bad.errors[0]).toMatchObject({ line: 0, field: 'benchmark id' });
  });

  it('lists at most 100 problems and counts the rest', () => {
    const text = Array.from({ length: 150 }, (_, i) => `{"id": "${i}"}`).join('\n');
    const parsed = parseBenchmarkJsonl(text, 'many');
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.errors).toHaveLength(101);
    expect(parsed.errors[100]!.message).toMatch(/and 200 more problems/);
  });
});

describe('scoreAnswer', () => {
  const item = (over: Partial<BenchmarkItem>): BenchmarkItem => ({ id: 'x', question: 'q', answer: 'a', ...over });

  it('exact: compares after normalizing case, whitespace and punctuation, on the first line', () => {
    expect(scoreAnswer(item({ answer: 'Lily' }), ' lily.\nShe loved')).toEqual({ extracted: 'lily.', score: 1 });
    expect(scoreAnswer(item({ answer: 'New York' }), 'Answer:  new   YORK!')).toMatchObject({ score: 1 });
    expect(scoreAnswer(item({ answer: 'Lily' }), ' Lily and Tom')).toMatchObject({ score: 0 });
    expect(scoreAnswer(item({ answer: 'Lily' }), '')).toEqual({ extracted: '', score: 0 });
  });

  it('numeric: reads the labelled number, else the last one (a worked answer ends on its result), with separators', () => {
    const n = item({ answer: '1000', scorer: 'numeric' });
    expect(scoreAnswer(n, 'It is 1,000 apples')).toEqual({ extracted: '1,000', score: 1 });
    expect(scoreAnswer(n, '10 boxes of 100 apples: 10 x 100 = 1,000')).toEqual({ extracted: '1,000', score: 1 });
    expect(scoreAnswer(n, '1000 apples, or 10 boxes')).toEqual({ extracted: '10', score: 0 });
    const eggs = item({ answer: '18', scorer: 'numeric' });
    expect(scoreAnswer(eggs, 'Janet has 16 eggs. She uses 3 + 4 = 7, so 16 - 7 = 9 are left. At $2 each she makes $18.')).toEqual({ extracted: '$18', score: 1 });
    expect(scoreAnswer(eggs, 'The answer is 18, from 16 - 7 = 9 eggs at $2')).toMatchObject({ extracted: '18', score: 1 });
    expect(scoreAnswer(n, 'We had 3 bags... The answer is 1000.0')).toMatchObject({ extracted: '1000.0', score: 1 });
    expect(scoreAnswer(n, '#### 999')).toMatchObject({ score: 0 });
    expect(scoreAnswer(n, 'no idea')).toEqual({ extracted: '', score: 0 });
  });

  it('choice: reads a letter in the usual forms, or the text of a choice', () => {
    const c = item({ answer: 'B', choices: ['Rock', 'Apple', 'Stone'] });
    for (const output of ['B', '(B)', 'B) Apple', 'Answer: B', 'The answer is (B).', 'apple']) {
      expect(scoreAnswer(c, output), output).toEqual({ extracted: 'B', score: 1 });
    }
    expect(scoreAnswer(c, 'A. Rock')).toEqual({ extracted: 'A', score: 0 });
    expect(scoreAnswer(c, 'A cat sat down')).toEqual({ extracted: '', score: 0 });
    expect(scoreAnswer(c, 'D')).toEqual({ extracted: '', score: 0 });
  });

  it('contains: whole words after normalizing; regex: case-insensitive match', () => {
    const w = item({ answer: 'the water', scorer: 'contains' });
    expect(scoreAnswer(w, 'Fish live in THE water, mostly.')).toEqual({ extracted: 'the water', score: 1 });
    expect(scoreAnswer(w, 'in the waterfall')).toMatchObject({ score: 0 });
    const r = item({ answer: '\\b(red|blue)\\b', scorer: 'regex' });
    expect(scoreAnswer(r, 'My favourite is Blue.')).toEqual({ extracted: 'Blue', score: 1 });
    expect(scoreAnswer(r, 'green')).toEqual({ extracted: '', score: 0 });
  });
});

describe('renderPrompt', () => {
  it('sends the question as written in variant 0 and distinct paraphrases after it', () => {
    const story: BenchmarkItem = { id: 's', question: 'Once upon a time, there was a little girl named', answer: 'Lily' };
    expect(renderPrompt(story)).toBe(story.question);
    const variants = Array.from({ length: PROMPT_VARIANTS }, (_, v) => renderPrompt(story, v));
    expect(new Set(variants).size).toBe(PROMPT_VARIANTS);
    // Only words before the question: the answer follows the same text in every variant.
    for (const v of variants) expect(v.endsWith(story.question)).toBe(true);
    expect(renderPrompt(story, PROMPT_VARIANTS)).toBe(variants[0]);
  });

  it('lists the choices with letters and asks for the letter', () => {
    const mcq: BenchmarkItem = { id: 'm', question: 'Which is a fruit?', answer: 'B', choices: ['Rock', 'Apple'] };
    expect(renderPrompt(mcq)).toBe('Which is a fruit?\nA. Rock\nB. Apple\nAnswer with the letter of the right choice.');
  });
});

describe('loadBenchmarksDir', () => {
  it('loads every .jsonl file by its name and refuses bad files without stopping the others', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'benchmarks-'));
    await writeFile(join(dir, 'stories.jsonl'), lines({ id: '1', question: 'Once upon a time', answer: 'there' }));
    await writeFile(join(dir, 'broken.jsonl'), lines({ id: '1', question: 'q' }));
    await writeFile(join(dir, 'bad name!.jsonl'), lines({ id: '1', question: 'q', answer: 'a' }));
    await writeFile(join(dir, 'notes.txt'), 'ignored');
    const loaded = await loadBenchmarksDir(dir);
    expect(loaded.benchmarks.map((b) => [b.id, b.items.length, b.source])).toEqual([['stories', 1, 'directory']]);
    expect(loaded.invalid.map((f) => [f.fileName, f.errors[0]!.line, f.errors[0]!.field])).toEqual([
      ['bad name!.jsonl', 0, 'file name'],
      ['broken.jsonl', 1, 'answer'],
    ]);
  });
});
