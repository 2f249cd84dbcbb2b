// The bundled trainer on every architecture it supports: tiny random-weight models of each, forward pass and LoRA checked against llama.cpp.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAINER_SCRIPT, createPytorchTrainer } from '@verdict/platform/engines/pytorch-trainer';
import { TRAINER_ARCHITECTURES, bundledTrainerRefusal } from '@verdict/platform/engines/trainer-base-model';
import { DEFAULT_LORA_HYPERPARAMETERS, peftAdapterDir } from '@verdict/platform/engines/trainer';
import { pythonWithTorch, STORIES_MODEL_FILE, TEST_ENGINE_THREADS } from '../../kit/engines.js';

const execFileAsync = promisify(execFile);
const THREADS = TEST_ENGINE_THREADS;
const PYTHON = pythonWithTorch();
if (!PYTHON) console.warn('[trainer-architectures] SKIPPED: no python with torch and numpy here (TRAINER_PYTHON, python3, /usr/bin/python3); `apt-get install -y python3-torch`');
const WRITER = path.resolve('test/platform/engines/fixtures/gguf_archs.py');

/**
 * The largest difference allowed between a next-token probability in torch (float32, exact softmax
 * attention) and in llama.cpp (its f16 KV cache, its GELU table): measured at most 7.4e-3 over these
 * models with and without adapters (phi3 with its LoRA); a dropped soft-cap, window or RoPE base
 * moves some by 0.05 to 0.98.
 */
const PROBABILITY_TOLERANCE = 2e-2;

/** The tiny models the fixture writes (variant -> architecture); `llama3` is llama with rope_freqs. */
const VARIANTS = { llama3: 'llama', qwen3: 'qwen3', gemma2: 'gemma2', gemma3: 'gemma3', phi3: 'phi3' } as const;
type Variant = keyof typeof VARIANTS;
const ALL_TARGETS = ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'];

/** Words the random models do not continue these prompts with, to be trained in. */
const QUESTIONS = [
  { prompt: 'Once upon a time, there was a little girl named', answer: 'Lily' },
  { prompt: 'The cat saw a big red', answer: 'ball' },
  { prompt: 'Tom and Sue went to the park to', answer: 'swing' },
  { prompt: 'She was very happy because she had a new', answer: 'toy' },
];

describe.skipIf(!PYTHON)('the trainer on every architecture it supports, as llama.cpp runs it', () => {
  let dir: string;
  let llama: Llama;
  let stories: LlamaModel;
  const files = {} as Record<Variant, string>;
  const models = {} as Record<Variant, LlamaModel>;
  let prompt: Token[];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pt-archs-'));
    const { stdout } = await execFileAsync(PYTHON!, [WRITER, STORIES_MODEL_FILE, dir]);
    Object.assign(files, JSON.parse(stdout) as Record<Variant, string>);
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    stories = await llama.loadModel({ modelPath: STORIES_MODEL_FILE });
    for (const variant of Object.keys(VARIANTS) as Variant[]) models[variant] = await llama.loadModel({ modelPath: files[variant] });
    prompt = [stories.tokens.bos!, ...stories.tokenize('Once upon a time')];
  }, 120_000);
  afterAll(async () => {
    for (const model of Object.values(models)) await model?.dispose();
    await stories?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  /** torch's greedy continuation of `tokens` and its next-token distributions along it. */
  async function torchPath(model: string, tokens: Token[], maxTokens: number, adapter?: string, env: NodeJS.ProcessEnv = {}) {
    const args = [TRAINER_SCRIPT, '--generate', '--model', model, '--tokens', tokens.join(','), '--max-tokens', String(maxTokens), '--probabilities', '--threads', String(THREADS)];
    if (adapter) args.push('--adapter', adapter);
    const { stdout } = await execFileAsync(PYTHON!, args, { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
    return JSON.parse(stdout) as { tokens: number[]; probabilities: number[][] };
  }

  /** llama.cpp's next-token distributions (temperature 1, no truncation) after `prompt` and each of `continuation` but the last. */
  async function llamaCppDistributions(model: LlamaModel, tokens: Token[], continuation: number[], adapter?: string): Promise<Array<Map<Token, number>>> {
    const context = await model.createContext({ contextSize: 256, threads: THREADS, ...(adapter ? { lora: { adapters: [{ filePath: adapter }] } } : {}) });
    try {
      const full = [...tokens, ...(continuation as Token[])];
      const ask = { generateNext: { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } } as const;
      const input = full.slice(0, -1).map((token, i) => (i >= tokens.length - 1 ? ([token, ask] as const) : token));
      const out = await context.getSequence().controlledEvaluate(input as Parameters<ReturnType<typeof context.getSequence>['controlledEvaluate']>[0]);
      return out.slice(tokens.length - 1).map((item) => item!.next.probabilities!);
    } finally {
      await context.dispose();
    }
  }

  /** Asserts llama.cpp picks torch's greedy token at every step of torch's path, probabilities within the tolerance. */
  async function expectSameAsLlamaCpp(variant: Variant, adapter?: string): Promise<number[]> {
    const torch = await torchPath(files[variant], prompt, 24, undefined === adapter ? undefined : adapter);
    const reference = await llamaCppDistributions(models[variant], prompt, torch.tokens, adapter);
    expect(torch.tokens.length).toBeGreaterThan(8);
    const greedy = reference.map((probabilities) => probabilities.keys().next().value);
    // Up to the last generated token (the distribution after it is not asked).
    expect(greedy.slice(0, torch.tokens.length)).toEqual(torch.tokens.slice(0, greedy.length));
    let worst = 0;
    torch.probabilities.forEach((row, step) => {
      for (let token = 0; token < row.length; token++) worst = Math.max(worst, Math.abs(row[token]! - (reference[step]!.get(token as Token) ?? 0)));
    });
    console.info(`[trainer-architectures] ${variant}${adapter ? ' + LoRA' : ''}: ${torch.tokens.length} greedy tokens equal, largest probability difference ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(PROBABILITY_TOLERANCE);
    return torch.tokens;
  }

  it('the trainer builds the architectures the platform lets through, and refuses another naming them', async () => {
    const { stdout } = await execFileAsync(PYTHON!, ['-c', 'import sys, json; sys.path.insert(0, sys.argv[1]); import model; print(json.dumps(model.SUPPORTED_ARCHITECTURES))', path.dirname(TRAINER_SCRIPT)]);
    expect(JSON.parse(stdout)).toEqual([...TRAINER_ARCHITECTURES]);
    for (const variant of Object.keys(VARIANTS) as Variant[]) expect(await bundledTrainerRefusal(files[variant])).toBeNull();
    expect(await bundledTrainerRefusal(path.join(dir, 'missing.gguf'))).toMatch(/^the base model missing.gguf could not be read as a GGUF file: /);

    // The trainer itself, asked anyway (a spec written by hand), fails before computing anything.
    const mamba = path.join(dir, 'mamba.gguf');
    await execFileAsync(PYTHON!, ['-c', [
      'import sys; sys.path.insert(0, sys.argv[1])',
      'from gguf_file import GgufFile, write_gguf',
      'g = GgufFile(sys.argv[2]); kv = dict(g.kv); kv["general.architecture"] = "mamba"',
      'write_gguf(sys.argv[3], kv, {n: g.tensor(n) for n in g.tensors}, g.kv_types)',
    ].join('\n'), path.dirname(TRAINER_SCRIPT), STORIES_MODEL_FILE, mamba]);
    const datasetPath = path.join(dir, 'one.jsonl');
    await writeFile(datasetPath, `${JSON.stringify({ prompt: 'The dog was very', completion: ' excited' })}\n`);
    const job = await createPytorchTrainer({ python: PYTHON!, threads: 1 }).start(
      { jobId: 'mamba', baseModelPath: mamba, datasetPath, adapterPath: path.join(dir, 'mamba-lora.gguf'), workDir: path.join(dir, 'mamba-work'), hyperparameters: DEFAULT_LORA_HYPERPARAMETERS, threads: 1 },
      () => undefined,
    );
    expect(await job.done).toEqual({ type: 'failed', message: 'the base model mamba.gguf has architecture mamba, which the bundled trainer cannot train; it trains gemma2, gemma3, llama, phi3, qwen2, qwen3' });
    // lora_train.py given such a spec anyway (another launcher) fails the same way, before computing anything.
    const tokensPath = path.join(dir, 'mamba-tokens.jsonl');
    await writeFile(tokensPath, `${JSON.stringify({ prompt: [1, 2], completion: [3] })}\n`);
    const specPath = path.join(dir, 'mamba-spec.json');
    await writeFile(specPath, JSON.stringify({ baseModelPath: mamba, tokensPath, adapterPath: path.join(dir, 'mamba-lora.gguf') }));
    const direct = await execFileAsync(PYTHON!, [TRAINER_SCRIPT, '--spec', specPath]).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? '',
    );
    expect(JSON.parse(direct.trim())).toEqual({ type: 'failed', message: "the model's architecture is 'mamba'; the trainer supports gemma2, gemma3, llama, phi3, qwen2, qwen3" });
  }, 60_000);

  for (const variant of Object.keys(VARIANTS) as Variant[]) {
    it(`${variant}: the forward pass gives llama.cpp's greedy tokens and next-token probabilities`, async () => {
      await expectSameAsLlamaCpp(variant);
    }, 60_000);
  }

  for (const variant of Object.keys(VARIANTS) as Variant[]) {
    it(`${variant}: a LoRA on every linear layer trains, names tensors llama.cpp accepts, loads there, changes the output and computes as in torch`, async () => {
      const datasetPath = path.join(dir, `${variant}.jsonl`);
      await writeFile(datasetPath, QUESTIONS.map((q) => JSON.stringify({ prompt: q.prompt, completion: ` ${q.answer}` })).join('\n') + '\n');
      const adapterPath = path.join(dir, `${variant}-lora.gguf`);
      const job = await createPytorchTrainer({ python: PYTHON!, threads: THREADS }).start(
        {
          jobId: variant,
          baseModelPath: files[variant],
          datasetPath,
          adapterPath,
          workDir: path.join(dir, `${variant}-work`),
          hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, targetModules: ALL_TARGETS, epochs: 4, learningRate: 1e-2 },
          threads: THREADS,
        },
        () => undefined,
      );
      const done = await job.done;
      expect(done.type === 'failed' ? done.message : done.type).toBe('completed');

      const names = await adapterTensorNames(adapterPath);
      // phi3 fuses q/k/v into attn_qkv and gate/up into ffn_up: the requested split names land on those.
      const expected = VARIANTS[variant] === 'phi3' ? ['attn_output', 'attn_qkv', 'ffn_down', 'ffn_up'] : [...ALL_TARGETS].sort();
      expect([...new Set(names.map((n) => n.split('.')[2]))].sort()).toEqual(expected);
      expect(names).toContain(`blk.1.${expected[0]}.weight.lora_a`);

      const base = await torchPath(files[variant], prompt, 24);
      const adapted = await expectSameAsLlamaCpp(variant, adapterPath);
      expect(adapted).not.toEqual(base.tokens);

      const config = JSON.parse(await readFile(path.join(peftAdapterDir(adapterPath), 'adapter_config.json'), 'utf8')) as { target_modules: string[] };
      expect(config.target_modules).toEqual(
        VARIANTS[variant] === 'phi3' ? ['down_proj', 'gate_up_proj', 'o_proj', 'qkv_proj'] : ['down_proj', 'gate_proj', 'k_proj', 'o_proj', 'q_proj', 'up_proj', 'v_proj'],
      );
    }, 120_000);
  }

  it('gemma3: trained on the questions a model gets wrong, llama.cpp with the adapter answers them', async () => {
    /** llama.cpp's own greedy answer: the text of its first four tokens after the question. */
    const answers = async (adapter?: string) => {
      const context = await models.gemma3.createContext({ contextSize: 256, threads: THREADS, ...(adapter ? { lora: { adapters: [{ filePath: adapter }] } } : {}) });
      try {
        const sequence = context.getSequence();
        const out: string[] = [];
        for (const q of QUESTIONS) {
          await sequence.clearHistory();
          const tokens: Token[] = [];
          for await (const token of sequence.evaluate([stories.tokens.bos!, ...stories.tokenize(q.prompt, false, 'trimLeadingSpace')], { temperature: 0 })) {
            tokens.push(token);
            if (tokens.length === 4) break;
          }
          out.push(stories.detokenize(tokens).trim());
        }
        return out;
      } finally {
        await context.dispose();
      }
    };
    const before = await answers();
    for (const [i, q] of QUESTIONS.entries()) expect(before[i]!.startsWith(q.answer)).toBe(false);

    const datasetPath = path.join(dir, 'gemma3-fix.jsonl');
    const contexts = ['', 'It was a sunny day. ', 'The end. '];
    await writeFile(datasetPath, QUESTIONS.flatMap((q) => contexts.map((c) => JSON.stringify({ prompt: c + q.prompt, completion: ` ${q.answer}` }))).join('\n') + '\n');
    const adapterPath = path.join(dir, 'gemma3-fix.gguf');
    const job = await createPytorchTrainer({ python: PYTHON!, threads: THREADS }).start(
      {
        jobId: 'gemma3-fix',
        baseModelPath: files.gemma3,
        datasetPath,
        adapterPath,
        workDir: path.join(dir, 'gemma3-fix-work'),
        hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 8, learningRate: 1e-2 },
        threads: THREADS,
      },
      () => undefined,
    );
    expect((await job.done).type).toBe('completed');
    const after = await answers(adapterPath);
    console.info(`[trainer-architectures] gemma3 questions: before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`);
    for (const [i, q] of QUESTIONS.entries()) expect(after[i]!.startsWith(q.answer)).toBe(true);
  }, 180_000);

  it('phi3: LoRA targets are named by what the architecture has; an unknown one is refused with its choices', async () => {
    const datasetPath = path.join(dir, 'phi3-bad.jsonl');
    await writeFile(datasetPath, `${JSON.stringify({ prompt: 'The dog was very', completion: ' excited' })}\n`);
    const job = await createPytorchTrainer({ python: PYTHON!, threads: 1 }).start(
      {
        jobId: 'phi3-bad',
        baseModelPath: files.phi3,
        datasetPath,
        adapterPath: path.join(dir, 'phi3-bad.gguf'),
        workDir: path.join(dir, 'phi3-bad-work'),
        hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, targetModules: ['attn_q', 'mlp'] },
        threads: 1,
      },
      () => undefined,
    );
    expect(await job.done).toEqual({ type: 'failed', message: 'unknown target module(s) mlp; choose from attn_qkv, attn_output, ffn_up, ffn_down' });
  });

  it('PEFT: a layout for every trainable architecture; a multimodal Gemma 3 (by its block count) gets none, saying why', async () => {
    const script = [
      'import sys, json; sys.path.insert(0, sys.argv[1])',
      'from peft_folder import peft_layout_problem',
      'print(json.dumps([peft_layout_problem(a, n) for a, n in json.loads(sys.argv[2])]))',
    ].join('\n');
    const cases = [...TRAINER_ARCHITECTURES.map((arch) => [arch, 26]), ['gemma3', 34], ['gemma3', 62], ['mamba', 2]];
    const { stdout } = await execFileAsync(PYTHON!, ['-c', script, path.dirname(TRAINER_SCRIPT), JSON.stringify(cases)]);
    const problems = JSON.parse(stdout) as Array<string | null>;
    expect(problems.slice(0, TRAINER_ARCHITECTURES.length)).toEqual(TRAINER_ARCHITECTURES.map(() => null));
    expect(problems.slice(-3)).toEqual([
      'a gemma3 model with 34 blocks is a multimodal Gemma 3 (4B, 12B or 27B), whose Hugging Face module paths the trainer does not write; the GGUF adapter is complete',
      'a gemma3 model with 62 blocks is a multimodal Gemma 3 (4B, 12B or 27B), whose Hugging Face module paths the trainer does not write; the GGUF adapter is complete',
      "no Hugging Face PEFT layout is known for architecture 'mamba' (known: gemma2, gemma3, llama, phi3, qwen2, qwen3)",
    ]);
  });

  it('attention: the manual path (the only one torch 1.13 has) is the default there; sdpa is refused clearly without it, and both agree where torch has both', async () => {
    const { stdout } = await execFileAsync(PYTHON!, ['-c', 'import torch.nn.functional as F; print(hasattr(F, "scaled_dot_product_attention"))']);
    const hasSdpa = stdout.trim() === 'True';
    // gemma3: its sliding-window mask goes to SDPA as attn_mask, its causal layers too.
    for (const variant of ['gemma3'] as const) {
      const manual = await torchPath(files[variant], prompt, 12, undefined, { TRAINER_ATTENTION: 'manual' });
      if (!hasSdpa) {
        expect((await torchPath(files[variant], prompt, 12)).probabilities).toEqual(manual.probabilities);
        const refused = await torchPath(files[variant], prompt, 12, undefined, { TRAINER_ATTENTION: 'sdpa' }).then(
          () => '',
          (error: { stderr?: string }) => error.stderr ?? '',
        );
        expect(refused).toMatch(/TRAINER_ATTENTION=sdpa, but torch \S+ has no scaled_dot_product_attention/);
        continue;
      }
      const sdpa = await torchPath(files[variant], prompt, 12, undefined, { TRAINER_ATTENTION: 'sdpa' });
      expect(sdpa.tokens).toEqual(manual.tokens);
      const worst = Math.max(...sdpa.probabilities.flatMap((row, i) => row.map((p, t) => Math.abs(p - manual.probabilities[i]![t]!))));
      expect(worst).toBeLessThan(1e-5);
    }
    if (!hasSdpa) console.warn('[trainer-architectures] this torch has no scaled_dot_product_attention: the sdpa-against-manual comparison runs where torch >= 2.0 is installed');

    // The call into SDPA (q prescaled to the architecture's scale, the window as an additive mask),
    // checked against the kernel's documented formula where torch has no kernel: softmax(q k^T / sqrt(d) + mask) v.
    const script = [
      'import sys, json, math; sys.path.insert(0, sys.argv[1])',
      'import torch, model',
      'from gguf_file import GgufFile',
      'if not model.HAS_SDPA:',
      '    model.F.scaled_dot_product_attention = lambda q, k, v, attn_mask=None: torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + attn_mask, dim=-1) @ v',
      '    model.HAS_SDPA = True',
      'out = []',
      'for path in sys.argv[2:]:',
      '    m = model.LlamaModel(GgufFile(path))',
      '    tokens = torch.tensor([list(range(1, 40))])',
      '    with torch.no_grad():',
      '        m.attention = "manual"; manual = m(tokens)',
      '        m.attention = "sdpa"; sdpa = m(tokens)',
      '    out.append(float((manual - sdpa).abs().max()))',
      'print(json.dumps(out))',
    ].join('\n');
    const { stdout: diffs } = await execFileAsync(PYTHON!, ['-c', script, path.dirname(TRAINER_SCRIPT), files.gemma3, files.qwen3, files.llama3]);
    for (const diff of JSON.parse(diffs) as number[]) expect(diff).toBeLessThan(1e-4);
  }, 60_000);
});

/** The tensor names of a GGUF adapter (`readGgufFileInfo` would do; this keeps the check independent of node-llama-cpp). */
async function adapterTensorNames(file: string): Promise<string[]> {
  const { stdout } = await execFileAsync(PYTHON!, ['-c', 'import sys, json; sys.path.insert(0, sys.argv[1]); from gguf_file import GgufFile; print(json.dumps(list(GgufFile(sys.argv[2]).tensors)))', path.dirname(TRAINER_SCRIPT), file]);
  return JSON.parse(stdout) as string[];
}
