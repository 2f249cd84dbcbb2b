// The bundled trainer on quantized GGUF models: every tensor type read as llama.cpp reads it, and a LoRA trained on a Q4_K file that llama.cpp applies to that file.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { getLlama, LlamaLogLevel, type ControlledEvaluateInputItem, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAINER_SCRIPT, createPytorchTrainer } from '@verdict/platform/engines/pytorch-trainer';
import { tokenizeExample } from '@verdict/platform/engines/trainer-examples';
import { DEFAULT_LORA_HYPERPARAMETERS } from '@verdict/platform/engines/trainer';
import { TRAINER_ARCHITECTURES, TRAINER_TENSOR_TYPES, bundledTrainerRefusal } from '@verdict/platform/engines/trainer-base-model';
import { STORIES_MODEL_FILE, TEST_ENGINE_THREADS, pythonWithTorch } from '../../kit/engines.js';

const execFileAsync = promisify(execFile);
const THREADS = TEST_ENGINE_THREADS;
const FIXTURE = path.resolve(import.meta.dirname, 'fixtures/gguf_quant.py');
const python = pythonWithTorch();
if (!python) console.warn('SKIPPED the quantized-model trainer tests: no python with torch and numpy (TRAINER_PYTHON, python3, /usr/bin/python3)');

/** Every tensor type the trainer reads, then a file mixing them per tensor as a Q4_K_M file does. */
const TYPES = ['F32', 'F16', 'BF16', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_NL', 'IQ4_XS', 'mix'];
const STEPS = 8;
/**
 * Largest difference of a next-token probability between torch and llama.cpp when only the token
 * embeddings are of the type: llama.cpp dequantizes those rows exactly (get_rows) and computes the
 * rest in float32, so what is left is the trainer's f16 rounding of the weights and llama.cpp's f16
 * KV cache; a wrong value anywhere in a block would move it by far more.
 */
const EXACT_TOLERANCE = 0.005;
/**
 * The same bound when every matrix is of the type: llama.cpp's CPU dot products then quantize the
 * activations to 8 bits (Q8_0 blocks of 32 for the legacy types, Q8_K blocks of 256 for the
 * k-quants and IQ4_XS) before multiplying; that moves a probability by up to about 0.06 on these
 * random models (the Q8_K types about four times more than the Q8_0 ones).
 */
const COMPUTED_TOLERANCE = 0.08;
/** With every matrix of the type, the greedy token must be llama.cpp's wherever torch's best two tokens are more than this apart (a closer pair can flip under llama.cpp's 8-bit activations). */
const DECISIVE_GAP = 0.1;

describe.skipIf(!python)('the trainer reads quantized GGUF models as llama.cpp does', () => {
  let dir: string;
  let llama: Llama;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pt-quant-'));
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    await execFileAsync(python!, [FIXTURE, STORIES_MODEL_FILE, dir, ...TYPES.flatMap((type) => [type, `${type}:embd`])]);
  }, 120_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function torchGreedy(model: string, tokens: Token[], maxTokens: number, adapter?: string): Promise<{ tokens: Token[]; probabilities: number[][] }> {
    const args = [TRAINER_SCRIPT, '--generate', '--probabilities', '--model', model, '--tokens', tokens.join(','), '--max-tokens', String(maxTokens)];
    if (adapter) args.push('--adapter', adapter);
    const { stdout } = await execFileAsync(python!, args, { maxBuffer: 64 << 20 });
    return JSON.parse(stdout) as { tokens: Token[]; probabilities: number[][] };
  }

  /** llama.cpp's greedy continuation of `tokens`, up to its end-of-sequence token (as the trainer's `--generate`). */
  async function llamaGreedy(model: LlamaModel, tokens: Token[], maxTokens: number, adapter?: string): Promise<Token[]> {
    const context = await model.createContext({ contextSize: 256, threads: THREADS, ...(adapter ? { lora: { adapters: [{ filePath: adapter }] } } : {}) });
    try {
      const out: Token[] = [];
      for await (const token of context.getSequence().evaluate(tokens, { temperature: 0, yieldEogToken: true })) {
        if (token === model.tokens.eos || out.length === maxTokens) break;
        out.push(token);
        if (out.length === maxTokens) break;
      }
      return out;
    } finally {
      await context.dispose();
    }
  }

  /** llama.cpp's whole next-token distribution after each of `sequence`'s last `steps` tokens (no sampling cut-offs). */
  async function llamaProbs(model: LlamaModel, sequence: Token[], steps: number, adapter?: string): Promise<Map<Token, number>[]> {
    const context = await model.createContext({ contextSize: 256, threads: THREADS, ...(adapter ? { lora: { adapters: [{ filePath: adapter }] } } : {}) });
    try {
      const first = sequence.length - steps;
      const input = sequence.map(
        (token, i): ControlledEvaluateInputItem =>
          i < first ? token : [token, { generateNext: { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } }],
      );
      const out = await context.getSequence().controlledEvaluate(input);
      return out.slice(first).map((item) => item!.next.probabilities!);
    } finally {
      await context.dispose();
    }
  }

  /** Largest probability difference over all steps and tokens, and the steps whose best token differs where torch's best two are `margin` apart. */
  function compare(ours: number[][], theirs: Map<Token, number>[], margin: number): { worst: number; decisive: number; disagreements: number[] } {
    let worst = 0;
    let decisive = 0;
    const disagreements: number[] = [];
    theirs.forEach((probs, step) => {
      const mine = ours[step]!;
      expect(probs.size).toBe(mine.length);
      for (const [token, p] of probs) worst = Math.max(worst, Math.abs(p - mine[token]!));
      const [first, second] = [...mine].sort((a, b) => b - a);
      if (first! - second! <= margin) return;
      decisive++;
      const best = mine.indexOf(first!);
      if (probs.keys().next().value !== best) disagreements.push(step);
    });
    return { worst, decisive, disagreements };
  }

  it.each(TYPES)('%s: the same values as llama.cpp (greedy tokens equal, probabilities within 0.005 when only the embeddings are of the type; within 0.08 and greedy tokens equal where not a near tie when all matrices are)', async (type) => {
    const prompt = [1 as Token, ...(await promptTokens())];
    // Only the embeddings of the type: llama.cpp reads the values exactly.
    const exactFile = path.join(dir, `${type}-embd.gguf`);
    const exactModel = await llama.loadModel({ modelPath: exactFile });
    let exact: ReturnType<typeof compare>;
    try {
      const reference = await llamaGreedy(exactModel, prompt, STEPS);
      const torch = await torchGreedy(exactFile, prompt, STEPS);
      expect(torch.tokens).toEqual(reference);
      expect(reference.length).toBeGreaterThan(3);
      exact = compare(torch.probabilities, await llamaProbs(exactModel, [...prompt, ...torch.tokens.slice(0, -1)], torch.tokens.length), 0);
      expect(exact.worst).toBeLessThan(EXACT_TOLERANCE);
    } finally {
      await exactModel.dispose();
    }
    // Every matrix of the type: llama.cpp computes with 8-bit activations.
    const file = path.join(dir, `${type}.gguf`);
    const model = await llama.loadModel({ modelPath: file });
    try {
      const torch = await torchGreedy(file, prompt, STEPS);
      const computed = compare(torch.probabilities, await llamaProbs(model, [...prompt, ...torch.tokens.slice(0, -1)], torch.tokens.length), DECISIVE_GAP);
      console.info(
        `${type}: largest next-token probability difference ${exact.worst.toFixed(5)} with only the embeddings of the type, ` +
          `${computed.worst.toFixed(5)} with every matrix (greedy token equal on ${computed.decisive - computed.disagreements.length}/${computed.decisive} decisive steps of ${torch.tokens.length})`,
      );
      expect(computed.worst).toBeLessThan(COMPUTED_TOLERANCE);
      expect(computed.disagreements).toEqual([]);
      expect(computed.decisive).toBeGreaterThanOrEqual(3);
    } finally {
      await model.dispose();
    }
  }, 60_000);

  it('trains a LoRA on a Q4_K model that llama.cpp applies to the quantized file, moving its answers to the trained ones', async () => {
    const file = path.join(dir, 'Q4_K.gguf');
    const model = await llama.loadModel({ modelPath: file });
    try {
      const questions = [
        { prompt: 'Once upon a time, there was a little girl named', answer: ' Lily' },
        { prompt: 'One day, a little boy named Tom went to the', answer: ' park' },
        { prompt: 'The cat saw a big red', answer: ' ball' },
        { prompt: 'The sun was shining and the birds were', answer: ' singing' },
        { prompt: 'Mom said, "You can have a', answer: ' cookie' },
        { prompt: 'Ben liked to eat', answer: ' food' },
      ];
      const tokenized = questions.map((q) => tokenizeExample(model, { prompt: q.prompt, completion: q.answer }));
      /** llama.cpp's mean log-probability of each answer's tokens after its prompt, and how many answers it gives greedily. */
      const measure = async (adapter?: string) => {
        let logProb = 0;
        let greedyRight = 0;
        for (const { prompt, completion } of tokenized) {
          const probs = await llamaProbs(model, [...prompt, ...completion.slice(0, -1)], completion.length, adapter);
          logProb += completion.reduce((sum, token, i) => sum + Math.log(probs[i]!.get(token) ?? 1e-30), 0) / completion.length;
          const greedy = await llamaGreedy(model, prompt, completion.length, adapter);
          if (greedy.join(',') === completion.join(',')) greedyRight++;
        }
        return { logProb: logProb / tokenized.length, greedyRight };
      };
      const before = await measure();

      const datasetPath = path.join(dir, 'q4k.jsonl');
      await writeFile(datasetPath, questions.map((q) => JSON.stringify({ prompt: q.prompt, completion: q.answer })).join('\n') + '\n');
      const adapterPath = path.join(dir, 'q4k-lora.gguf');
      const job = await createPytorchTrainer({ python: python!, threads: THREADS }).start(
        {
          jobId: 'q4k',
          baseModelPath: file,
          datasetPath,
          adapterPath,
          workDir: path.join(dir, 'q4k-work'),
          hyperparameters: {
            ...DEFAULT_LORA_HYPERPARAMETERS,
            rank: 8,
            alpha: 16,
            epochs: 30,
            learningRate: 5e-3,
            targetModules: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'],
          },
          threads: THREADS,
        },
        () => undefined,
      );
      const done = await job.done;
      expect(done).toMatchObject({ type: 'completed', adapterPath });

      const after = await measure(adapterPath);
      console.info(
        `Q4_K model, LoRA trained on its dequantized weights and applied by llama.cpp to the Q4_K file: mean answer log-probability ` +
          `${before.logProb.toFixed(2)} -> ${after.logProb.toFixed(2)}, greedy answers ${before.greedyRight}/6 -> ${after.greedyRight}/6`,
      );
      expect(before.greedyRight).toBe(0);
      expect(after.logProb).toBeGreaterThan(Math.max(before.logProb + 5, -1));
      expect(after.greedyRight).toBeGreaterThanOrEqual(5);
      // The adapter as torch applies it to the dequantized weights is the one llama.cpp applies to the quantized file.
      const { prompt } = tokenized[0]!;
      const torch = await torchGreedy(file, prompt, 4, adapterPath);
      const adapted = compare(torch.probabilities, await llamaProbs(model, [...prompt, ...torch.tokens.slice(0, -1)], torch.tokens.length, adapterPath), DECISIVE_GAP);
      expect(adapted.worst).toBeLessThan(COMPUTED_TOLERANCE);
      expect(adapted.disagreements).toEqual([]);
    } finally {
      await model.dispose();
    }
  }, 180_000);

  it('the platform\'s check before charging takes every type the trainer reads, and refuses another type or architecture naming what it supports', async () => {
    for (const type of TYPES) expect(await bundledTrainerRefusal(path.join(dir, `${type}.gguf`))).toBeNull();
    await execFileAsync(python!, [FIXTURE, STORIES_MODEL_FILE, dir, 'IQ2_XXS']);
    const refusal = await bundledTrainerRefusal(path.join(dir, 'IQ2_XXS.gguf'));
    expect(refusal).toBe(
      'the base model IQ2_XXS.gguf has tensors stored as IQ2_XXS (token_embd.weight, blk.0.attn_q.weight, blk.0.attn_k.weight, and 13 more), ' +
        'which the bundled trainer cannot read; it reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS ' +
        '(a Q4_K_M, Q5_K_M, Q8_0 or f16 file of the model trains)',
    );
    // The trainer itself refuses the file with the same list.
    const generate = await execFileAsync(python!, [TRAINER_SCRIPT, '--generate', '--model', path.join(dir, 'IQ2_XXS.gguf'), '--tokens', '1']).then(
      () => '',
      (error: { stderr: string }) => error.stderr,
    );
    expect(generate).toContain('tensor token_embd.weight is stored as IQ2_XXS; the trainer reads F32, F16, BF16, Q4_0');
    // Another architecture: the header says so before any tensor is read.
    const gpt2 = path.join(dir, 'gpt2.gguf');
    await execFileAsync(python!, [
      '-c',
      'import sys; sys.path.insert(0, sys.argv[1]); import gguf_file as gguf, numpy as np; ' +
        'gguf.write_gguf(sys.argv[2], {"general.architecture": "gpt2"}, {"token_embd.weight": np.zeros((4, 4), np.float32)})',
      path.dirname(TRAINER_SCRIPT),
      gpt2,
    ]);
    expect(await bundledTrainerRefusal(gpt2)).toBe('the base model gpt2.gguf has architecture gpt2, which the bundled trainer cannot train; it trains gemma2, gemma3, llama, phi3, qwen2, qwen3');
    expect(await bundledTrainerRefusal(path.join(dir, 'missing.gguf'))).toMatch(/^the base model missing.gguf could not be read as a GGUF file: /);
  });

  it('names the same tensor types and architectures as the Python trainer', async () => {
    const { stdout } = await execFileAsync(python!, [
      '-c',
      'import sys, json; sys.path.insert(0, sys.argv[1]); import gguf_file as gguf, model; ' +
        'print(json.dumps({"types": gguf.SUPPORTED_TYPE_NAMES, "archs": sorted(model.ARCHS)}))',
      path.dirname(TRAINER_SCRIPT),
    ]);
    expect(JSON.parse(stdout)).toEqual({ types: TRAINER_TENSOR_TYPES, archs: [...TRAINER_ARCHITECTURES].sort() });
  });

  let storiesVocab: LlamaModel | undefined;
  /** "Once upon a time" in the stories260K tokenizer every test model has. */
  async function promptTokens(): Promise<Token[]> {
    storiesVocab ??= await llama.loadModel({ modelPath: STORIES_MODEL_FILE, vocabOnly: true });
    return storiesVocab.tokenize('Once upon a time');
  }
});
