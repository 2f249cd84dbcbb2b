// A chat model trains in the form it is asked in: each example's prompt tokens are the tokens llama.cpp evaluated for that question's chat request, and the trained model fixes the questions.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { renderPrompt } from '@verdict/platform/benchmarks/prompts';
import type { ChatMessage } from '@verdict/platform/engines/chat-form';
import { startLlamaServer, type Evaluation, type LlamaServer } from '@verdict/platform/engines/llama-server';
import { createPytorchTrainer } from '@verdict/platform/engines/pytorch-trainer';
import { tokenizeExamples } from '@verdict/platform/engines/trainer-examples';
import type { TrainingExample } from '@verdict/platform/engines/trainer';
import { BENCHMARK_501_FILE, STORIES_MODEL_FILE } from '../kit/engines.js';
import { withStringMetadata } from '../platform/engines/fixtures/gguf-metadata.js';
import { startTestSandbox, waitForRun, waitForTraining, type TestSandbox } from '../platform/helpers.js';

const MODEL = 'stories-chat';
/** As MODEL, its assistant's turn closed by the end-of-sequence token. */
const EOS_MODEL = 'stories-chat-eos';
/**
 * Chat templates in words stories260K knows. MODEL's closes the assistant's turn with a newline:
 * stories260K never saw its end-of-sequence token (its stories are separated by BOS), so no LoRA
 * raises that token, while a newline it writes all the time.
 */
const turns = (close: string) =>
  "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}Tom asked: {{ message['content'] }}\n" +
  `{% elif message['role'] == 'assistant' %}Lily said: {{ message['content'] }}${close}{% endif %}{% endfor %}` +
  "{% if add_generation_prompt %}Lily said:{% endif %}";
const TEMPLATES: Record<string, string> = { [MODEL]: turns('\n'), [EOS_MODEL]: turns('{{ eos_token }}') };
const ITEMS: BenchmarkItem[] = fs
  .readFileSync(BENCHMARK_501_FILE, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as BenchmarkItem);

const trainer = createPytorchTrainer({ threads: 1 });
const availability = await trainer.availability();
if (!availability.ok) console.warn(`SKIPPED the chat-form training test (a real run, a real training, a real run): ${availability.reason}`);

let dir: string;
let modelsDir: string;
let modelFile: string;
const servers = new Map<string, LlamaServer>();
const evaluations: Evaluation[] = [];
let llama: Llama;
const vocabs = new Map<string, LlamaModel>();
let sandbox: TestSandbox | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chat-form-'));
  modelsDir = path.join(dir, 'models');
  fs.mkdirSync(modelsDir);
  modelFile = path.join(modelsDir, `${MODEL}.gguf`);
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  // One server a model: a server of several base models needs `base_model` to load an adapter, which INFERENCE_URL's adapter loading does not send.
  for (const [id, template] of Object.entries(TEMPLATES)) {
    const folder = id === MODEL ? modelsDir : path.join(dir, id);
    fs.mkdirSync(folder, { recursive: true });
    await withStringMetadata(STORIES_MODEL_FILE, path.join(folder, `${id}.gguf`), 'tokenizer.chat_template', template);
    vocabs.set(id, await llama.loadModel({ modelPath: path.join(folder, `${id}.gguf`), vocabOnly: true }));
    servers.set(id, await startLlamaServer({ modelsDir: folder, threads: 1, parallel: 2, onEvaluated: (evaluation) => evaluations.push(evaluation) }));
  }
}, 60_000);

afterAll(async () => {
  await sandbox?.sandbox.stop();
  for (const server of servers.values()) await server.close();
  for (const vocab of vocabs.values()) await vocab.dispose();
  await llama?.dispose();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const userText = (input: string | ChatMessage[]) => (typeof input === 'string' ? null : input.find((m) => m.role === 'user')?.text);

/** The engine's evaluation of the chat request that asked `model` `question` (the last one, when asked twice). */
function evaluationOf(model: string, question: string): Evaluation | undefined {
  return evaluations.findLast((e) => e.route === '/v1/chat/completions' && e.model === model && userText(e.input) === question);
}

/** The tokens evaluated for `evaluation`'s prompt: all of them but the generated tokens fed back after it, which must follow in order. */
function promptOf(evaluation: Evaluation, length: number): Token[] {
  const prompt = evaluation.evaluated.slice(0, length);
  expect(evaluation.evaluated.slice(length)).toEqual(evaluation.generated.slice(0, evaluation.evaluated.length - length));
  return prompt;
}

async function askChat(model: string, question: string): Promise<void> {
  const response = await fetch(`${servers.get(model)!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: question }], max_tokens: 1, temperature: 0 }),
  });
  expect(response.status).toBe(200);
}

describe('an example rendered as the run asks it', () => {
  it.each([
    [MODEL, '\n'],
    [EOS_MODEL, '</s>'],
  ])("in chat form (%s): the prompt tokens are the ones the engine evaluated for the question's chat request; the answer ends the turn", async (model, close) => {
    const vocab = vocabs.get(model)!;
    const questions = ITEMS.slice(0, 3).flatMap((item) => [0, 1, 2, 3, 4].map((variant) => ({ item, prompt: renderPrompt(item, variant) })));
    for (const { prompt } of questions) await askChat(model, prompt);
    const examples: TrainingExample[] = questions.map(({ item, prompt }) => ({ prompt, completion: item.answer, style: 'chat' }));
    const tokenized = tokenizeExamples(vocab, examples);
    for (const [i, { prompt, item }] of questions.entries()) {
      const example = tokenized[i]!;
      const evaluation = evaluationOf(model, prompt)!;
      expect(evaluation, prompt).toBeDefined();
      expect(example.prompt).toEqual(promptOf(evaluation, example.prompt.length));
      // The template's words around the question; the answer, then what closes the assistant's turn.
      const rendered = vocab.detokenize(example.prompt, true);
      expect(rendered.startsWith('<s>') && rendered.includes(`Tom asked: ${prompt}`) && rendered.endsWith('Lily said: ')).toBe(true);
      const answer = vocab.tokenize(close === '</s>' ? item.answer : `${item.answer}${close}`, false, 'trimLeadingSpace');
      expect(example.completion).toEqual(close === '</s>' ? [...answer, vocab.tokens.eos] : answer);
    }
    // An example whose form is not said is rendered as the embedded engine asks this model: in chat form.
    expect(tokenizeExamples(vocab, examples.map(({ prompt, completion }) => ({ prompt, completion })))).toEqual(tokenized);
  });

  it('in completion form: the prompt as the completion endpoint feeds it, the answer with its newline, no chat template', async () => {
    const vocab = vocabs.get(MODEL)!;
    const [example] = tokenizeExamples(vocab, [{ prompt: 'Lily liked to play in the', completion: ' park\n', style: 'completion' }]);
    expect(example!.prompt[0]).toBe(vocab.tokens.bos);
    expect(vocab.detokenize(example!.prompt)).toBe('Lily liked to play in the');
    expect(vocab.detokenize([...example!.prompt, ...example!.completion])).toBe('Lily liked to play in the park\n');
  });

  it('refuses, in words, a chat-form example on a model whose GGUF has no chat template', async () => {
    const plain = await llama.loadModel({ modelPath: STORIES_MODEL_FILE, vocabOnly: true });
    try {
      expect(() => tokenizeExamples(plain, [{ prompt: 'Lily liked to play in the', completion: 'park', style: 'chat' }])).toThrow(
        /asked the questions as chat.*no chat template \(tokenizer\.chat_template\)/,
      );
    } finally {
      await plain.dispose();
    }
  });
});

describe.skipIf(!availability.ok)('run, train and run again on a chat model (llama.cpp and the PyTorch trainer)', () => {
  it("trains every example in the engine's chat form, and the trained model fixes the questions it trained on", async () => {
    sandbox = await startTestSandbox({
      inference: { url: servers.get(MODEL)!.url, concurrency: 2, pollIntervalMs: 50, benchmarkItems: async (id) => (id === '501' ? ITEMS : null) },
      training: {
        trainer,
        adaptersDir: path.join(dir, 'adapters'),
        workDir: path.join(dir, 'training'),
        threads: 1,
        baseModelPath: (id: string) => (id === MODEL ? modelFile : null),
        // A 260K-parameter model learns a one-word answer from 5 variants of a question at this rate.
        hyperparameters: { learningRate: 0.01 },
      },
    });
    const { platform } = sandbox;
    const before = await waitForRun(platform, (await platform.launchRun({ benchmarkId: '501', modelId: MODEL }, 'before')).id, 240_000);
    expect(before.status).toBe('completed');
    const dataset = await platform.buildDataset({ runId: before.id, augmentation: 5 }, 'dataset');
    expect(dataset.trainedQuestionIds.length).toBeGreaterThan(0);
    const launched = await platform.launchTraining({ datasetId: dataset.id, baseModelId: MODEL, epochs: 3 }, 'training');
    const training = await waitForTraining(platform, launched.id, 480_000);
    expect(training).toMatchObject({ status: 'completed' });

    const db = new pg.Pool({ connectionString: sandbox.databaseUrl, max: 1 });
    try {
      const stored = (await db.query<{ examples: TrainingExample[] }>('SELECT examples FROM sandbox.datasets WHERE id = $1', [dataset.id])).rows[0]!.examples;
      expect(stored).toHaveLength(dataset.trainedQuestionIds.length * 5);
      expect(new Set(stored.map((e) => e.style))).toEqual(new Set(['chat']));
      // What the trainer trained on, token for token: the prompt the engine evaluates for each example's chat request.
      const tokens = fs
        .readFileSync(path.join(dir, 'training', launched.id, 'tokens.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { prompt: Token[]; completion: Token[] });
      expect(tokens).toHaveLength(stored.length);
      const asked = new Set(evaluations.filter((e) => e.model === MODEL).map((e) => userText(e.input)));
      for (const example of stored) if (!asked.has(example.prompt)) await askChat(MODEL, example.prompt);
      let fromTheRun = 0;
      for (const [i, example] of stored.entries()) {
        const evaluation = evaluationOf(MODEL, example.prompt)!;
        expect(tokens[i]!.prompt).toEqual(promptOf(evaluation, tokens[i]!.prompt.length));
        expect(vocabs.get(MODEL)!.detokenize(tokens[i]!.completion)).toBe(`${example.completion}\n`);
        if (ITEMS.some((item) => item.question === example.prompt)) fromTheRun++;
      }
      // Variant 0 of every trained question is the prompt the run itself asked.
      expect(fromTheRun).toBe(dataset.trainedQuestionIds.length);

      const after = await waitForRun(platform, (await platform.launchRun({ benchmarkId: '501', modelId: training.producedModelId! }, 'after')).id, 240_000);
      expect(after.status).toBe('completed');
      const answers = async (runId: string) =>
        new Map(
          (await db.query<{ question_id: string; score: number; style: string; raw_output: string; finish_reason: string }>(
            'SELECT question_id, score, style, raw_output, finish_reason FROM sandbox.run_answers WHERE run_id = $1',
            [runId],
          )).rows.map((row) => [row.question_id, row]),
        );
      const [was, now] = [await answers(before.id), await answers(after.id)];
      for (const row of [...was.values(), ...now.values()]) expect(row.style).toBe('chat');
      const fixed = dataset.trainedQuestionIds.filter((id) => was.get(id)!.score < 0.5 && now.get(id)!.score >= 0.5);
      console.info(
        `[chat-form] ${fixed.length} of ${dataset.trainedQuestionIds.length} trained questions fixed; ` +
          `trained answers: ${dataset.trainedQuestionIds.map((id) => `${id}=${JSON.stringify(now.get(id)!.raw_output)} (${now.get(id)!.finish_reason})`).join(', ')}`,
      );
      expect(fixed.length).toBeGreaterThanOrEqual(Math.ceil(dataset.trainedQuestionIds.length / 2));
      // It learned to end its turn: each fixed answer stops by itself, not at the token budget.
      for (const id of fixed) expect(now.get(id)!.finish_reason, id).toBe('stop');
    } finally {
      await db.end();
    }
  }, 900_000);
});
