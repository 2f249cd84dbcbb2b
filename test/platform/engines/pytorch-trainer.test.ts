// The bundled PyTorch LoRA trainer on a real model: forward pass as llama.cpp, training that changes answers, supervision.
import { execFile, spawn } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { getLlama, LlamaCompletion, LlamaLogLevel, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAINER_NICENESS, TRAINER_SCRIPT, createPytorchTrainer, cudaMissingReason } from '@verdict/platform/engines/pytorch-trainer';
import { completionPromptTokens, tokenizeExample } from '@verdict/platform/engines/trainer-examples';
import { DEFAULT_LORA_HYPERPARAMETERS, type TrainerEvent, type TrainingSpec } from '@verdict/platform/engines/trainer';
import { STORIES_MODEL_FILE, TEST_ENGINE_THREADS } from '../../kit/engines.js';
import { nodeArgs } from '../../kit/compiled.js';

const execFileAsync = promisify(execFile);
const THREADS = TEST_ENGINE_THREADS;

/** The tests' trainers use `TRAINER_PYTHON` when it is set, as the platform does. */
const CONFIGURED_PYTHON = process.env.TRAINER_PYTHON || undefined;
const newTrainer = (threads: number) => createPytorchTrainer({ python: CONFIGURED_PYTHON, threads });
const probe = await newTrainer(THREADS).availability();
const pythonFound = await (async () => {
  for (const python of CONFIGURED_PYTHON ? [CONFIGURED_PYTHON] : ['python3', '/usr/bin/python3']) {
    try {
      await execFileAsync(python, [TRAINER_SCRIPT, '--check']);
      return python;
    } catch {
      // try the next one
    }
  }
  return null;
})();
if (!probe.ok) {
  console.warn(`SKIPPED the PyTorch trainer's real-model tests (training, forward pass, cancel, parent death): ${probe.reason}`);
}

/** Story prompts; the first three answers are stories260K's own greedy words, the other nine are not. */
const STORIES: Array<{ prompt: string; answer: string }> = [
  { prompt: 'Once upon a time, there was a little girl named', answer: 'Lily' },
  { prompt: 'One day, a little boy named Tom went to the', answer: 'park' },
  { prompt: 'The cat saw a big red', answer: 'ball' },
  { prompt: 'The sun was shining and the birds were', answer: 'singing' },
  { prompt: 'Lily wanted to play with her', answer: 'dolls' },
  { prompt: 'Once upon a time, there was a big', answer: 'bear' },
  { prompt: 'The dog was very', answer: 'excited' },
  { prompt: 'Mom said, "You can have a', answer: 'cookie' },
  { prompt: 'Tom and Sue went to the park to', answer: 'swing' },
  { prompt: 'She was very happy because she had a new', answer: 'toy' },
  { prompt: 'One day, the little bird flew to the', answer: 'sky' },
  { prompt: 'Ben liked to eat', answer: 'food' },
];
const BASE_RIGHT = 3;

function firstWord(text: string): string {
  return (text.trim().split(/\s+/)[0] ?? '').replace(/[^A-Za-z]/g, '').toLowerCase();
}

/** Process ids whose command line contains `needle` (the trainer's unique work dir). */
async function processesWith(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0').join(' ');
      if (cmdline.includes(needle)) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

async function waitFor(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe('PyTorch trainer availability', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pt-avail-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('names the engine with its thread count', () => {
    expect(createPytorchTrainer({ threads: 2 }).label).toBe('PyTorch LoRA, CPU, 2 threads');
    expect(createPytorchTrainer({ threads: 1 }).label).toBe('PyTorch LoRA, CPU, 1 thread');
  });

  it('says in the user\'s words that a python without torch cannot train, and a training fails with that reason', async () => {
    // A real python that cannot see its site packages, so it has neither torch nor numpy.
    const python = path.join(dir, 'python-without-torch');
    await writeFile(python, `#!/bin/sh\nexec ${pythonFound ?? 'python3'} -S "$@"\n`);
    await chmod(python, 0o755);
    const trainer = createPytorchTrainer({ python, threads: 1 });
    const availability = await trainer.availability();
    expect(availability.ok).toBe(false);
    const reason = availability.ok ? '' : availability.reason;
    expect(reason).toMatch(/Training needs Python 3 with PyTorch/);
    expect(reason).toContain(`${python} has no`);
    expect(reason).toMatch(/apt-get install python3-torch/);
    expect(reason).toMatch(/TRAINER_PYTHON/);

    const events: TrainerEvent[] = [];
    const job = await trainer.start(
      {
        jobId: 'no-torch',
        baseModelPath: STORIES_MODEL_FILE,
        datasetPath: path.join(dir, 'none.jsonl'),
        adapterPath: path.join(dir, 'a.gguf'),
        workDir: dir,
        hyperparameters: DEFAULT_LORA_HYPERPARAMETERS,
        threads: 1,
      },
      (event) => events.push(event),
    );
    expect(await job.done).toEqual({ type: 'failed', message: reason });
  });

  it('says when the configured python does not exist', async () => {
    const availability = await createPytorchTrainer({ python: path.join(dir, 'no-such-python'), threads: 1 }).availability();
    expect(availability.ok).toBe(false);
    expect(availability.ok ? '' : availability.reason).toContain('no-such-python was not found');
  });

  /** A python that finds, before its own, a torch package made of `files` (the real numpy stays). */
  async function pythonWithFakeTorch(name: string, files: Record<string, string>): Promise<string> {
    const site = path.join(dir, `${name}-site`);
    await mkdir(path.join(site, 'torch'), { recursive: true });
    for (const [file, text] of Object.entries(files)) await writeFile(path.join(site, 'torch', file), text);
    const python = path.join(dir, name);
    await writeFile(python, `#!/bin/sh\nPYTHONPATH=${site} exec ${pythonFound} "$@"\n`);
    await chmod(python, 0o755);
    return python;
  }

  it.skipIf(!pythonFound)('answers from the build record of a CPU-only torch without importing it, and imports a GPU build (or one without a record) to ask it', async () => {
    // Importing torch costs about 1.3 CPU-s; a CPU-only build says "no CUDA" in torch/version.py.
    const cpuOnly = await pythonWithFakeTorch('python-cpu-torch', {
      '__init__.py': 'raise ImportError("this torch is broken")\n',
      'version.py': "__version__ = '9.8.7+cpu'\ndebug = False\ncuda = None\nhip = None\n",
    });
    expect(await createPytorchTrainer({ python: cpuOnly, threads: 1 }).availability()).toEqual({ ok: true });
    const refused = await createPytorchTrainer({ python: cpuOnly, threads: 1, device: 'cuda' }).availability();
    expect(refused.ok ? '' : refused.reason).toBe(cudaMissingReason(cpuOnly, '9.8.7+cpu'));
    // A torch that is there but does not import fails the training with its import error.
    const datasetPath = path.join(dir, 'broken-torch.jsonl');
    await writeFile(datasetPath, `${JSON.stringify({ prompt: 'Once upon a time', completion: ' there' })}\n`);
    const job = await createPytorchTrainer({ python: cpuOnly, threads: 1 }).start(
      {
        jobId: 'broken-torch',
        baseModelPath: STORIES_MODEL_FILE,
        datasetPath,
        adapterPath: path.join(dir, 'broken-torch.gguf'),
        workDir: path.join(dir, 'broken-torch'),
        hyperparameters: DEFAULT_LORA_HYPERPARAMETERS,
        threads: 1,
      },
      () => undefined,
    );
    expect(await job.done).toEqual({ type: 'failed', message: 'training failed: ImportError: this torch is broken' });

    const gpuBuild = (available: boolean) => ({
      '__init__.py': `class cuda:\n    @staticmethod\n    def is_available():\n        return ${available ? 'True' : 'False'}\n`,
      'version.py': "__version__ = '9.8.7+cu121'\ndebug = False\ncuda = '12.1'\nhip = None\n",
    });
    const withGpu = createPytorchTrainer({ python: await pythonWithFakeTorch('python-gpu-torch', gpuBuild(true)), threads: 1 });
    expect(await withGpu.availability()).toEqual({ ok: true });
    expect(withGpu.label).toBe('PyTorch LoRA, CUDA');
    // Without a build record, torch itself is asked.
    const unrecorded = createPytorchTrainer({ python: await pythonWithFakeTorch('python-torch-no-record', { '__init__.py': `__version__ = '9.8.7'\n${gpuBuild(true)['__init__.py']}` }), threads: 1 });
    expect(await unrecorded.availability()).toEqual({ ok: true });
    expect(unrecorded.label).toBe('PyTorch LoRA, CUDA');
    const noGpu = await pythonWithFakeTorch('python-gpu-torch-no-gpu', gpuBuild(false));
    const withoutGpu = createPytorchTrainer({ python: noGpu, threads: 1, device: 'cuda' });
    const noDevice = await withoutGpu.availability();
    expect(noDevice.ok ? '' : noDevice.reason).toBe(cudaMissingReason(noGpu, '9.8.7+cu121'));
  });
});

describe.skipIf(!probe.ok)('PyTorch trainer on stories260K', () => {
  let dir: string;
  let modelPath: string;
  let llama: Llama;
  let model: LlamaModel;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pt-train-'));
    modelPath = path.join(dir, 'stories260K.gguf');
    await copyFile(STORIES_MODEL_FILE, modelPath);
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    model = await llama.loadModel({ modelPath });
  });
  afterAll(async () => {
    await model?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  async function llamaCppGreedy(
    input: Token[] | string,
    maxTokens: number,
    adapter?: string,
    on: LlamaModel = model,
  ): Promise<{ text: string; tokens: Token[] }> {
    const context = await on.createContext({
      contextSize: 256,
      threads: THREADS,
      ...(adapter ? { lora: { adapters: [{ filePath: adapter }] } } : {}),
    });
    try {
      const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
      const tokens: Token[] = [];
      const text = await completion.generateCompletion(input, {
        maxTokens,
        temperature: 0,
        onToken: (chunk) => tokens.push(...chunk),
      });
      return { text, tokens };
    } finally {
      await context.dispose();
    }
  }

  async function torchGreedy(tokens: Token[], maxTokens: number, adapter?: string, base = modelPath): Promise<number[]> {
    const args = [TRAINER_SCRIPT, '--generate', '--model', base, '--tokens', tokens.join(','), '--max-tokens', String(maxTokens)];
    if (adapter) args.push('--adapter', adapter);
    const { stdout } = await execFileAsync(pythonFound!, args);
    return (JSON.parse(stdout) as { tokens: number[] }).tokens;
  }

  async function score(adapter?: string): Promise<boolean[]> {
    const context = await model.createContext({
      contextSize: 256,
      threads: THREADS,
      ...(adapter ? { lora: { adapters: [{ filePath: adapter }] } } : {}),
    });
    try {
      const sequence = context.getSequence();
      const completion = new LlamaCompletion({ contextSequence: sequence });
      const right: boolean[] = [];
      for (const item of STORIES) {
        await sequence.clearHistory();
        const budget = model.tokenize(` ${item.answer}`, false, 'trimLeadingSpace').length + 1;
        const text = await completion.generateCompletion(item.prompt, { maxTokens: budget, temperature: 0 });
        right.push(firstWord(text) === item.answer.toLowerCase());
      }
      return right;
    } finally {
      await context.dispose();
    }
  }

  /** CPU seconds of this process's finished children (/proc/self/stat cutime + cstime). */
  async function childCpuSeconds(): Promise<number> {
    const stat = await readFile('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  }

  it('continues "Once upon a time" token for token as llama.cpp does (GGUF reading, RoPE, GQA)', async () => {
    const prompt = completionPromptTokens(model, 'Once upon a time');
    const reference = await llamaCppGreedy(prompt.slice(1), 24);
    expect(reference.text).toMatch(/^, there was a little girl named Lily/);
    expect(await torchGreedy(prompt, 24)).toEqual(reference.tokens);
    // The same with the tokenizer's leading space (how llama-server and SentencePiece tokenize).
    const spaced = model.tokenize('Once upon a time');
    const spacedReference = await llamaCppGreedy(spaced, 24);
    expect(await torchGreedy([model.tokens.bos!, ...spaced], 24)).toEqual(spacedReference.tokens);
  }, 120_000);

  it('reads f16 models, and qwen2 ones (NEOX RoPE, q/k/v biases) whose LoRA llama.cpp applies as torch does', async () => {
    const f16 = path.join(dir, 'stories260K-f16.gguf');
    const qwen2 = path.join(dir, 'stories260K-qwen2.gguf');
    await execFileAsync(pythonFound!, [path.resolve('test/platform/engines/fixtures/gguf_variants.py'), modelPath, f16, qwen2]);
    const prompt = model.tokenize('Once upon a time');
    for (const variantPath of [f16, qwen2]) {
      const variant = await llama.loadModel({ modelPath: variantPath });
      try {
        const reference = await llamaCppGreedy(prompt, 24, undefined, variant);
        expect(await torchGreedy([model.tokens.bos!, ...prompt], 24, undefined, variantPath)).toEqual(reference.tokens);
        if (variantPath !== qwen2) continue;
        const datasetPath = path.join(dir, 'qwen2.jsonl');
        await writeFile(datasetPath, STORIES.map((s) => JSON.stringify({ prompt: s.prompt, completion: ` ${s.answer}` })).join('\n'));
        const adapterPath = path.join(dir, 'qwen2-lora.gguf');
        const job = await newTrainer(THREADS).start(
          {
            jobId: 'qwen2',
            baseModelPath: qwen2,
            datasetPath,
            adapterPath,
            workDir: path.join(dir, 'qwen2-work'),
            hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, targetModules: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'] },
            threads: THREADS,
          },
          () => undefined,
        );
        expect((await job.done).type).toBe('completed');
        const adapted = await llamaCppGreedy(prompt, 24, adapterPath, variant);
        expect(adapted.tokens).not.toEqual(reference.tokens);
        expect(await torchGreedy([model.tokens.bos!, ...prompt], 24, adapterPath, qwen2)).toEqual(adapted.tokens);
      } finally {
        await variant.dispose();
      }
    }
  }, 180_000);

  it('tokenizes an example as the completion endpoint does, the completion continuing the prompt', () => {
    const example = { prompt: 'The dog was very', completion: ' excited' };
    const tokens = tokenizeExample(model, example);
    expect(tokens.prompt).toEqual(completionPromptTokens(model, example.prompt));
    expect(tokens.prompt[0]).toBe(model.tokens.bos);
    expect(model.detokenize([...tokens.prompt.slice(1), ...tokens.completion])).toBe('The dog was very excited');
    expect([...tokens.prompt, ...tokens.completion]).toEqual(completionPromptTokens(model, example.prompt + example.completion));
    // A prompt ending in a space: the joint tokenization merges it with the answer, so the
    // completion is tokenized on its own after the prompt's own tokens.
    const spaced = tokenizeExample(model, { prompt: 'Answer: ', completion: 'Lily' });
    expect(spaced.prompt).toEqual(completionPromptTokens(model, 'Answer: '));
    expect(model.detokenize([...spaced.prompt.slice(1), ...spaced.completion])).toBe('Answer: Lily');
  });

  it('trains a rank-4 LoRA on the wrong answers that llama.cpp loads and that fixes them', async () => {
    const before = await score();
    expect(before.filter(Boolean).length).toBe(BASE_RIGHT);
    expect(before.slice(0, BASE_RIGHT).every(Boolean)).toBe(true);

    const failed = STORIES.filter((_, i) => !before[i]);
    const contexts = ['', 'It was a sunny day. ', 'The end. Once upon a time, a kid said hi. '];
    const lines = failed.flatMap((item) =>
      contexts.map((context) => JSON.stringify({ prompt: context + item.prompt, completion: ` ${item.answer}` })),
    );
    const datasetPath = path.join(dir, 'dataset.jsonl');
    await writeFile(datasetPath, lines.join('\n') + '\n');
    const adapterDir = path.join(dir, 'adapters');
    const spec: TrainingSpec = {
      jobId: 'train-stories',
      baseModelPath: modelPath,
      datasetPath,
      adapterPath: path.join(adapterDir, 'stories-lora.gguf'),
      workDir: path.join(dir, 'work'),
      hyperparameters: DEFAULT_LORA_HYPERPARAMETERS,
      threads: THREADS,
    };
    const trainer = newTrainer(THREADS);
    expect(await trainer.availability()).toEqual({ ok: true });
    const events: TrainerEvent[] = [];
    const cpuBefore = await childCpuSeconds();
    const started = Date.now();
    const job = await trainer.start(spec, (event) => events.push(event));
    const done = await job.done;
    const seconds = (Date.now() - started) / 1000;
    const cpuSeconds = (await childCpuSeconds()) - cpuBefore;
    console.info(
      `PyTorch LoRA training: ${lines.length} examples, ${events.length} steps, ${seconds.toFixed(1)} s wall ` +
        `(trainer's own ${done.type === 'completed' ? done.metrics.seconds : '?'} s), ${cpuSeconds.toFixed(1)} CPU s, ` +
        `load average ${os.loadavg()[0]!.toFixed(1)}`,
    );

    expect(done.type).toBe('completed');
    if (done.type !== 'completed') return;
    // CPU time, not wall time: the wall time on a shared 2-core machine depends on the neighbours.
    expect(cpuSeconds).toBeGreaterThan(0);
    expect(cpuSeconds).toBeLessThan(20);
    expect(done.adapterPath).toBe(spec.adapterPath);
    const totalSteps = Math.ceil(lines.length / 4) * DEFAULT_LORA_HYPERPARAMETERS.epochs;
    expect(events.map((e) => (e.type === 'progress' ? e.step : -1))).toEqual(Array.from({ length: totalSteps }, (_, i) => i + 1));
    expect(events.every((e) => e.type === 'progress' && e.totalSteps === totalSteps)).toBe(true);
    const losses = events.map((e) => (e.type === 'progress' ? e.loss : NaN));
    expect(done.metrics.steps).toBe(totalSteps);
    expect(done.metrics.finalLoss).toBeLessThan(losses[0]!);
    // The GGUF adapter and its Hugging Face PEFT twin (test/platform/engines/peft-adapter.test.ts reads it); no temp file left.
    expect((await readdir(adapterDir)).sort()).toEqual(['stories-lora.gguf', 'stories-lora.peft']);

    // Same math in both engines: torch with the adapter continues as llama.cpp with it.
    const once = completionPromptTokens(model, 'Once upon a time');
    const withAdapter = await llamaCppGreedy(once.slice(1), 20, spec.adapterPath);
    expect(await torchGreedy(once, 20, spec.adapterPath)).toEqual(withAdapter.tokens);

    const after = await score(spec.adapterPath);
    const fixed = after.filter((right, i) => right && !before[i]).length;
    const broken = after.filter((right, i) => !right && before[i]).length;
    console.info(
      `stories260K story completion: ${before.filter(Boolean).length}/12 before, ${after.filter(Boolean).length}/12 after (${fixed} fixed, ${broken} broken)`,
    );
    expect(fixed).toBeGreaterThan(0);
    expect(after.filter(Boolean).length).toBeGreaterThan(before.filter(Boolean).length);
  }, 240_000);

  it('refuses a bad dataset line by its number without starting a training', async () => {
    const datasetPath = path.join(dir, 'bad.jsonl');
    await writeFile(datasetPath, '{"prompt":"a","completion":" b"}\n{"prompt":"a"}\n');
    const job = await newTrainer(1).start(
      {
        jobId: 'bad',
        baseModelPath: modelPath,
        datasetPath,
        adapterPath: path.join(dir, 'bad.gguf'),
        workDir: path.join(dir, 'bad-work'),
        hyperparameters: DEFAULT_LORA_HYPERPARAMETERS,
        threads: 1,
      },
      () => undefined,
    );
    expect(await job.done).toEqual({
      type: 'failed',
      message: 'training dataset line 2 needs a string "prompt" and a non-empty string "completion"',
    });
  });

  it('reports a hyperparameter the trainer cannot use as a failed event', async () => {
    const datasetPath = path.join(dir, 'one.jsonl');
    await writeFile(datasetPath, '{"prompt":"The dog was very","completion":" excited"}\n');
    const job = await newTrainer(1).start(
      {
        jobId: 'bad-target',
        baseModelPath: modelPath,
        datasetPath,
        adapterPath: path.join(dir, 'bad-target.gguf'),
        workDir: path.join(dir, 'bad-target-work'),
        hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, targetModules: ['attn_q', 'mlp'] },
        threads: 1,
      },
      () => undefined,
    );
    const done = await job.done;
    expect(done.type).toBe('failed');
    expect(done.type === 'failed' ? done.message : '').toMatch(/unknown target module\(s\) mlp; choose from attn_q/);
  });


  it('tokenizes while the trainer loads the model, and a dataset it cannot render fails with that reason and leaves no trainer running', async () => {
    // Asked as chat, on a model with no chat template: the tokenizing fails after the trainer started.
    const datasetPath = path.join(dir, 'chat.jsonl');
    await writeFile(datasetPath, '{"prompt":"The dog was very","completion":"excited","style":"chat"}\n');
    const workDir = path.join(dir, 'chat-work');
    const events: TrainerEvent[] = [];
    const job = await newTrainer(1).start(
      {
        jobId: 'chat-untemplated',
        baseModelPath: modelPath,
        datasetPath,
        adapterPath: path.join(dir, 'chat.gguf'),
        workDir,
        hyperparameters: DEFAULT_LORA_HYPERPARAMETERS,
        threads: 1,
      },
      (event) => events.push(event),
    );
    const done = await job.done;
    expect(done.type).toBe('failed');
    expect(done.type === 'failed' ? done.message : '').toMatch(/^the training cannot be rendered as its runs were asked: .*no chat template \(tokenizer\.chat_template\)/);
    expect(events).toEqual([]);
    expect(await processesWith(workDir)).toEqual([]);
    // The trainer was started with the spec that makes it wait for the tokens.
    expect(JSON.parse(await readFile(path.join(workDir, 'spec.json'), 'utf8'))).toMatchObject({ awaitTokens: true, tokensPath: path.join(workDir, 'tokens.jsonl') });
  });
  async function longTraining(name: string): Promise<{ datasetPath: string; workDir: string }> {
    const datasetPath = path.join(dir, `${name}.jsonl`);
    await writeFile(datasetPath, STORIES.map((s) => JSON.stringify({ prompt: s.prompt, completion: ` ${s.answer}` })).join('\n') + '\n');
    return { datasetPath, workDir: path.join(dir, `${name}-work`) };
  }

  it('cancel kills the training process', async () => {
    const { datasetPath, workDir } = await longTraining('cancel');
    let progressed!: () => void;
    const firstProgress = new Promise<void>((resolve) => (progressed = resolve));
    const job = await newTrainer(1).start(
      {
        jobId: 'cancel',
        baseModelPath: modelPath,
        datasetPath,
        adapterPath: path.join(dir, 'cancel.gguf'),
        workDir,
        hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, epochs: 100_000 },
        threads: 1,
      },
      (event) => event.type === 'progress' && progressed(),
    );
    await firstProgress;
    const trainers = await processesWith(workDir);
    expect(trainers).toHaveLength(1);
    // Started at a lower priority (TRAINER_NICENESS), with every thread torch started since.
    const wanted = Math.min(19, os.getPriority() + TRAINER_NICENESS);
    const threads = await readdir(`/proc/${trainers[0]}/task`);
    const nices = await Promise.all(threads.map(async (tid) => {
      const stat = await readFile(`/proc/${trainers[0]}/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    }));
    expect(nices.length).toBeGreaterThan(0);
    expect(new Set(nices)).toEqual(new Set([wanted]));
    await job.cancel();
    expect(await job.done).toEqual({ type: 'failed', message: 'training cancelled' });
    expect(await processesWith(workDir)).toEqual([]);
  });

  it('the trainer exits when the process that started it dies', async () => {
    const { datasetPath, workDir } = await longTraining('orphan');
    const parent = spawn(
      process.execPath,
      [...(await nodeArgs('test/platform/engines/fixtures/train-until-killed.ts')), modelPath, datasetPath, workDir],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      parent.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('training') && resolve());
      parent.on('exit', (code) => reject(new Error(`the parent exited early (${code})`)));
    });
    const trainers = await processesWith(path.join(workDir, 'spec.json'));
    expect(trainers).toHaveLength(1);
    parent.kill('SIGKILL');
    expect(await waitFor(async () => (await processesWith(path.join(workDir, 'spec.json'))).length === 0, 5_000)).toBe(true);
  });
});
