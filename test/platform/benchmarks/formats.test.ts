// Benchmark files in the formats people have, read from the test kit: detected per file, named, every bad line named; scoring as people expect it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  describeFormat,
  exactMatch,
  formatBenchmarkErrors,
  parseBenchmarkJsonl,
  renderPrompt,
  scoreAnswer,
  type BenchmarkItem,
} from '@verdict/platform/benchmarks/index';

const KIT = path.resolve(import.meta.dirname, '../../kit/benchmarks');
const read = (name: string) => parseBenchmarkJsonl(readFileSync(path.join(KIT, name), 'utf8'), name.replace(/\.jsonl$/, ''));

function good(name: string) {
  const parsed = read(name);
  if (!parsed.ok) throw new Error(formatBenchmarkErrors(parsed.errors));
  return parsed;
}

function bad(name: string) {
  const parsed = read(name);
  expect(parsed.ok).toBe(false);
  if (parsed.ok) throw new Error('accepted');
  return { errors: parsed.errors.map((e) => ({ line: e.line, field: e.field ?? null })), messages: formatBenchmarkErrors(parsed.errors), format: parsed.format };
}

describe('benchmark files in the formats people have', () => {
  it('ours: a defaults line, a list of accepted answers, a stop sequence', () => {
    const parsed = good('ours.jsonl');
    expect(describeFormat(parsed.format)).toBe('read as our benchmark format');
    expect(parsed.items).toEqual([
      { id: 'girl', question: 'Once upon a time, there was a little girl named', answer: 'Lily', category: 'names', max_tokens: 16 },
      { id: 'boy', question: 'Once upon a time, there was a little boy named', answer: 'Tom', answers: ['Tom', 'Timmy'], category: 'names', max_tokens: 16 },
      { id: 'ball', question: 'Tom had a big red', answer: 'ball', category: 'toys', max_tokens: 16, stop: ['.'] },
      { id: 'park', question: 'Lily and Tom were', answer: 'playing', category: 'places', max_tokens: 16 },
    ]);
    const refused = bad('ours-bad.jsonl');
    expect(refused.errors).toEqual([
      { line: 1, field: 'defaults.stop' },
      { line: 3, field: 'answer' },
      { line: 4, field: 'question' },
    ]);
    expect(refused.messages).toContain('line 4, field question: contains a NUL character (\\u0000)');
  });

  it('OpenAI evals: input (a string or chat messages) -> question, ideal (a string or a list) -> answer', () => {
    const parsed = good('openai-evals.jsonl');
    expect(describeFormat(parsed.format)).toBe('read as OpenAI evals: input -> question (chat messages joined), ideal -> answer (a list: accepted answers), scorer exact');
    expect(parsed.items).toEqual([
      { id: 'q1', question: 'Once upon a time, there was a little girl named', answer: 'Lily', scorer: 'exact' },
      { id: 'q2', question: 'Once upon a time, there was a little boy named', answer: 'Tom', answers: ['Tom', 'Timmy'], scorer: 'exact' },
      { id: 'q3', question: 'Tom had a big red', answer: 'car', scorer: 'exact' },
    ]);
    const refused = bad('openai-evals-bad.jsonl');
    expect(refused.format?.id).toBe('openai_evals');
    expect(refused.errors).toEqual([
      { line: 2, field: 'ideal' },
      { line: 3, field: 'input' },
      { line: 4, field: 'input[0]' },
    ]);
  });

  it('detects a file by its questions even when its first line is bad', () => {
    const text = ['{"input": "Tom had a big red"}', '{"input": "The sun was", "ideal": "hot"}'].join('\n');
    const parsed = parseBenchmarkJsonl(text, 'late');
    expect(parsed).toMatchObject({ ok: false, format: { id: 'openai_evals' }, errors: [{ line: 1, field: 'ideal', message: 'is required' }] });
  });

  it('Inspect AI: input, target (a string or a list), choices, id, metadata', () => {
    const parsed = good('inspect.jsonl');
    expect(parsed.format.id).toBe('inspect');
    expect(parsed.items).toEqual([
      { id: 'i1', question: 'Once upon a time, there was a little girl named', answer: 'Lily', category: 'names' },
      { id: 'i2', question: 'Tom had a big red', answer: 'car', answers: ['car', 'ball'], category: 'toys' },
      { id: 'i3', question: 'Where did Lily play?', answer: 'A', choices: ['in the park', 'at school'], category: 'places' },
    ]);
    const refused = bad('inspect-bad.jsonl');
    expect(refused.errors).toEqual([
      { line: 2, field: 'target' },
      { line: 3, field: 'target' },
    ]);
    expect(refused.messages).toContain('line 3, field target: letter Z is past the 2 choices (A to B)');
  });

  it('MMLU rows: question, choices, answer as an index, subject as category', () => {
    const parsed = good('mmlu.jsonl');
    expect(describeFormat(parsed.format)).toBe('read as MMLU (Hugging Face rows): question -> question, choices -> choices, answer (index) -> answer letter, subject -> category');
    expect(parsed.items[1]).toEqual({ id: 'q2', question: 'Tom had a big red', answer: 'B', choices: ['car', 'ball', 'hat', 'box'], category: 'toys' });
    const refused = bad('mmlu-bad.jsonl');
    expect(refused.errors).toEqual([
      { line: 2, field: 'answer' },
      { line: 3, field: 'choices' },
    ]);
  });

  it('ARC rows: choices {text, label}, answerKey by its label', () => {
    const parsed = good('arc.jsonl');
    expect(parsed.format.id).toBe('arc');
    expect(parsed.items.map((i) => [i.id, i.answer, i.choices?.length])).toEqual([
      ['Mercury_7001', 'A', 4],
      ['Mercury_7002', 'C', 3],
    ]);
    const refused = bad('arc-bad.jsonl');
    expect(refused.errors).toEqual([
      { line: 2, field: 'answerKey' },
      { line: 3, field: 'choices' },
    ]);
  });

  it('GSM8K rows: the number after "####" is the answer, scored as a number, with lm-evaluation-harness\'s stop', () => {
    const parsed = good('gsm8k.jsonl');
    expect(parsed.format.id).toBe('gsm8k');
    expect(parsed.items.map((i) => [i.answer, i.scorer, i.stop, i.max_tokens])).toEqual([
      ['5', 'numeric', ['Question:'], 256],
      ['1200', 'numeric', ['Question:'], 256],
    ]);
    const refused = bad('gsm8k-bad.jsonl');
    expect(refused.errors).toEqual([
      { line: 2, field: 'answer' },
      { line: 3, field: 'answer' },
    ]);
    expect(refused.messages).toContain('line 2, field answer: does not end in "#### <number>"');
  });
});

describe('scoring as people expect it', () => {
  const item = (fields: Partial<BenchmarkItem>): BenchmarkItem => ({ id: 'x', question: 'q', answer: 'Lily', ...fields });

  it('exact: the whole line, or the answer where the line goes on after a punctuation mark; not a longer phrase', () => {
    expect(scoreAnswer(item({}), 'Lily. She loved to play outside').score).toBe(1);
    expect(scoreAnswer(item({}), 'Lily, who was five, ran').score).toBe(1);
    expect(scoreAnswer(item({}), 'Lily!\nShe ran').score).toBe(1);
    expect(scoreAnswer(item({}), '  lily  ').score).toBe(1);
    expect(scoreAnswer(item({}), 'Lily and Tom went out').score).toBe(0);
    expect(scoreAnswer(item({}), "Lily's dog barked.").score).toBe(0);
    expect(scoreAnswer(item({}), 'Lilypad.').score).toBe(0);
    expect(exactMatch('Dr. Smith went home', 'Dr. Smith')).toBe(false);
    expect(exactMatch('Dr. Smith. He went home', 'Dr. Smith')).toBe(true);
  });

  it('a list of accepted answers: right when any is', () => {
    const names = item({ answer: 'Tom', answers: ['Tom', 'Timmy'] });
    expect(scoreAnswer(names, 'Timmy. Timmy loved to play').score).toBe(1);
    expect(scoreAnswer(names, 'Ben.').score).toBe(0);
    expect(scoreAnswer(item({ answer: '5', answers: ['5', '5.0'], scorer: 'numeric' }), 'Answer: 5').score).toBe(1);
    expect(scoreAnswer(item({ answer: 'A', answers: ['A', 'C'], choices: ['x', 'y', 'z'] }), 'C').score).toBe(1);
  });

  it('stop sequences: the answer is the output cut at the first one', () => {
    const pet = item({ answer: 'dog', scorer: 'contains', stop: ['END', '\n\n'] });
    expect(scoreAnswer(pet, 'cat END dog').score).toBe(0);
    expect(scoreAnswer(pet, 'a dog\n\nand a cat').score).toBe(1);
    expect(scoreAnswer(item({ answer: 'ball', stop: [' '] }), 'ball and more').score).toBe(1);
  });

  it('GSM8K: the number after "####" (else the first), "," and "$" ignored', () => {
    const [five, money] = good('gsm8k.jsonl').items as [BenchmarkItem, BenchmarkItem];
    expect(scoreAnswer(five, '2 + 3 = 5.\n#### 5').score).toBe(1);
    expect(scoreAnswer(money, 'The shop took $1,200.\nQuestion: next one, 7').score).toBe(1);
    expect(scoreAnswer(money, 'They sold 400 + 800.\n#### $1,200').score).toBe(1);
    expect(scoreAnswer(money, '#### 1,100').score).toBe(0);
    // The stop sequence cuts the invented next question before its numbers are read.
    expect(scoreAnswer(five, 'Question: 5 apples?').extracted).toBe('');
  });

  it('renders a question of every format as the run sends it', () => {
    const [, mmlu] = good('mmlu.jsonl').items;
    expect(renderPrompt(mmlu!)).toBe('Tom had a big red\nA. car\nB. ball\nC. hat\nD. box\nAnswer with the letter of the right choice.');
  });
});
