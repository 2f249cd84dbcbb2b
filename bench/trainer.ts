// The bundled LoRA trainer at the scale people train: one epoch on a synthetic model with Qwen2.5-0.5B's shapes, its tokens/s, FLOP/s against a plain matmul, peak RSS, and its wall time through the platform against the trainer alone.
import { execFile, spawn } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { readGgufFileInfo } from 'node-llama-cpp';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { startLlamaServer } from '@verdict/platform/engines/llama-server';
import { TRAINER_SCRIPT, createPytorchTrainer } from '@verdict/platform/engines/pytorch-trainer';
import type { TrainerDevice } from '@verdict/platform/engines/trainer';
import { createHttpPlatform } from '@verdict/contract/http-client';
import { startSandbox } from '@verdict/platform/sandbox/sandbox';
import { pythonWithTorch, STORIES_MODEL_FILE } from '../test/kit/engines.js';
import { sleep } from '../test/kit/wait.js';
import { startPostgres } from './postgres.js';
import { envNumber, fmt, report } from './stats.js';

const execFileAsync = promisify(execFile);
const THREADS = envNumber('BENCH_TRAINER_THREADS', os.cpus().length);
const QUESTIONS = envNumber('BENCH_TRAINER_QUESTIONS', 6);
const AUGMENTATION = 5;
const DEVICE = (process.env.TRAINER_DEVICE || 'cpu') as TrainerDevice;

/** Qwen2.5-0.5B's shapes; the vocabulary padded to its 151,936 entries, the output tied to the embedding as in that model. */
const SHAPE = { hidden: 896, layers: 24, heads: 14, kvHeads: 2, ffn: 4864, vocab: 151_936, context: 32_768 };
const HEAD_DIM = SHAPE.hidden / SHAPE.heads;
const KV_DIM = SHAPE.kvHeads * HEAD_DIM;

/** Weights of the matrix products a token goes through: every block's projections and the (tied) output layer. */
const MATMUL_PARAMS =
  SHAPE.layers * (2 * SHAPE.hidden * SHAPE.hidden + 2 * SHAPE.hidden * KV_DIM + 3 * SHAPE.hidden * SHAPE.ffn) + SHAPE.vocab * SHAPE.hidden;

const SUBJECTS = ['Lily', 'Tom', 'Ben', 'Sue', 'Max', 'Mia', 'Sam', 'Anna'];
const PLACES = ['the park', 'the sea', 'the forest', 'school', 'the garden', 'the shop'];
const THINGS = ['ball', 'cat', 'tree', 'boat', 'cake', 'kite', 'dog', 'hat'];
const ITEMS: BenchmarkItem[] = Array.from({ length: QUESTIONS }, (_, i) => ({
  id: `q${i + 1}`,
  question: `One day, ${SUBJECTS[i % SUBJECTS.length]} went to ${PLACES[i % PLACES.length]} and saw a big`,
  answer: `red ${THINGS[i % THINGS.length]}`,
  scorer: 'exact',
}));

// ---------------------------------------------------------------- the synthetic model

type KvValue = { type: 'u32' | 'f32' | 'string'; value: number | string } | { type: 'strings'; value: string[] } | { type: 'f32s'; value: number[] } | { type: 'i32s'; value: number[] };

function ggufString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(bytes.length));
  return Buffer.concat([length, bytes]);
}

function ggufValue(kv: KvValue): Buffer {
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    return b;
  };
  const u64 = (n: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    return b;
  };
  const f32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    return b;
  };
  const i32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    return b;
  };
  switch (kv.type) {
    case 'u32':
      return Buffer.concat([u32(4), u32(kv.value as number)]);
    case 'f32':
      return Buffer.concat([u32(6), f32(kv.value as number)]);
    case 'string':
      return Buffer.concat([u32(8), ggufString(kv.value as string)]);
    case 'strings':
      return Buffer.concat([u32(9), u32(8), u64(kv.value.length), ...kv.value.map(ggufString)]);
    case 'f32s':
      return Buffer.concat([u32(9), u32(6), u64(kv.value.length), ...kv.value.map(f32)]);
    case 'i32s':
      return Buffer.concat([u32(9), u32(5), u64(kv.value.length), ...kv.value.map(i32)]);
  }
}

interface TensorPlan {
  name: string;
  /** ggml's ne: the fastest-varying dimension first. */
  dims: number[];
  type: 'f16' | 'f32';
  fill: 'random' | 'ones' | 'zeros';
}

/**
 * Writes a qwen2 GGUF of {@link SHAPE} with random f16 matrices (magnitudes 2^-8..2^-4, random
 * signs), unit norms and zero biases, and stories260K's tokenizer padded with unused tokens to the
 * vocabulary size. Returns its size in bytes.
 */
async function writeSyntheticModel(file: string): Promise<number> {
  const stories = (await readGgufFileInfo(STORIES_MODEL_FILE, { logWarnings: false })).metadata as unknown as {
    tokenizer: { ggml: { tokens: string[]; scores: number[]; token_type: number[] } };
  };
  const base = stories.tokenizer.ggml;
  const pad = SHAPE.vocab - base.tokens.length;
  const kv: Array<[string, KvValue]> = [
    ['general.architecture', { type: 'string', value: 'qwen2' }],
    ['general.name', { type: 'string', value: 'synthetic Qwen2.5-0.5B shapes' }],
    ['general.file_type', { type: 'u32', value: 1 }],
    ['qwen2.context_length', { type: 'u32', value: SHAPE.context }],
    ['qwen2.embedding_length', { type: 'u32', value: SHAPE.hidden }],
    ['qwen2.block_count', { type: 'u32', value: SHAPE.layers }],
    ['qwen2.feed_forward_length', { type: 'u32', value: SHAPE.ffn }],
    ['qwen2.attention.head_count', { type: 'u32', value: SHAPE.heads }],
    ['qwen2.attention.head_count_kv', { type: 'u32', value: SHAPE.kvHeads }],
    ['qwen2.rope.freq_base', { type: 'f32', value: 1_000_000 }],
    ['qwen2.attention.layer_norm_rms_epsilon', { type: 'f32', value: 1e-6 }],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'strings', value: [...base.tokens, ...Array.from({ length: pad }, (_, i) => `<pad_${i}>`)] }],
    ['tokenizer.ggml.scores', { type: 'f32s', value: [...base.scores, ...new Array<number>(pad).fill(0)] }],
    // 5: unused, so the tokenizer never matches them in text.
    ['tokenizer.ggml.token_type', { type: 'i32s', value: [...base.token_type, ...new Array<number>(pad).fill(5)] }],
    ['tokenizer.ggml.unknown_token_id', { type: 'u32', value: 0 }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: 1 }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: 2 }],
  ];
  const tensors: TensorPlan[] = [
    { name: 'token_embd.weight', dims: [SHAPE.hidden, SHAPE.vocab], type: 'f16', fill: 'random' },
    { name: 'output_norm.weight', dims: [SHAPE.hidden], type: 'f32', fill: 'ones' },
  ];
  for (let i = 0; i < SHAPE.layers; i++) {
    const blk = (name: string) => `blk.${i}.${name}`;
    tensors.push(
      { name: blk('attn_norm.weight'), dims: [SHAPE.hidden], type: 'f32', fill: 'ones' },
      { name: blk('attn_q.weight'), dims: [SHAPE.hidden, SHAPE.hidden], type: 'f16', fill: 'random' },
      { name: blk('attn_q.bias'), dims: [SHAPE.hidden], type: 'f32', fill: 'zeros' },
      { name: blk('attn_k.weight'), dims: [SHAPE.hidden, KV_DIM], type: 'f16', fill: 'random' },
      { name: blk('attn_k.bias'), dims: [KV_DIM], type: 'f32', fill: 'zeros' },
      { name: blk('attn_v.weight'), dims: [SHAPE.hidden, KV_DIM], type: 'f16', fill: 'random' },
      { name: blk('attn_v.bias'), dims: [KV_DIM], type: 'f32', fill: 'zeros' },
      { name: blk('attn_output.weight'), dims: [SHAPE.hidden, SHAPE.hidden], type: 'f16', fill: 'random' },
      { name: blk('ffn_norm.weight'), dims: [SHAPE.hidden], type: 'f32', fill: 'ones' },
      { name: blk('ffn_gate.weight'), dims: [SHAPE.hidden, SHAPE.ffn], type: 'f16', fill: 'random' },
      { name: blk('ffn_up.weight'), dims: [SHAPE.hidden, SHAPE.ffn], type: 'f16', fill: 'random' },
      { name: blk('ffn_down.weight'), dims: [SHAPE.ffn, SHAPE.hidden], type: 'f16', fill: 'random' },
    );
  }
  const ALIGN = 32;
  const bytesOf = (t: TensorPlan) => t.dims.reduce((a, b) => a * b, 1) * (t.type === 'f16' ? 2 : 4);
  const header: Buffer[] = [Buffer.from('GGUF'), Buffer.alloc(4), Buffer.alloc(8), Buffer.alloc(8)];
  header[1]!.writeUInt32LE(3);
  header[2]!.writeBigUInt64LE(BigInt(tensors.length));
  header[3]!.writeBigUInt64LE(BigInt(kv.length));
  for (const [key, value] of kv) header.push(ggufString(key), ggufValue(value));
  let offset = 0;
  for (const t of tensors) {
    const info = Buffer.alloc(4 + 8 * t.dims.length + 4 + 8);
    info.writeUInt32LE(t.dims.length, 0);
    t.dims.forEach((d, i) => info.writeBigUInt64LE(BigInt(d), 4 + 8 * i));
    info.writeUInt32LE(t.type === 'f16' ? 1 : 0, 4 + 8 * t.dims.length);
    info.writeBigUInt64LE(BigInt(offset), 8 + 8 * t.dims.length);
    header.push(ggufString(t.name), info);
    offset += Math.ceil(bytesOf(t) / ALIGN) * ALIGN;
  }
  let head = Buffer.concat(header);
  head = Buffer.concat([head, Buffer.alloc((ALIGN - (head.length % ALIGN)) % ALIGN)]);
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, head);
    const CHUNK = 1 << 24;
    for (const t of tensors) {
      const total = bytesOf(t);
      for (let done = 0; done < total; done += CHUNK) {
        const size = Math.min(CHUNK, total - done);
        const chunk = Buffer.alloc(size);
        if (t.fill === 'ones') for (let i = 0; i < size; i += 4) chunk.writeFloatLE(1, i);
        else if (t.fill === 'random') {
          const halves = new Uint16Array(chunk.buffer, chunk.byteOffset, size / 2);
          randomFillSync(halves);
          // Sign and mantissa random; exponent 7..10: |w| in [2^-8, 2^-4).
          for (let i = 0; i < halves.length; i++) {
            const r = halves[i]!;
            halves[i] = (r & 0x83ff) | ((7 + ((r >> 10) & 3)) << 10);
          }
        }
        writeSync(fd, chunk);
      }
      const padding = (ALIGN - (total % ALIGN)) % ALIGN;
      if (padding > 0) writeSync(fd, Buffer.alloc(padding));
    }
  } finally {
    closeSync(fd);
  }
  return (await stat(file)).size;
}

// ---------------------------------------------------------------- measurements

/** GFLOP/s of a plain float32 2048x2048 torch matmul on `threads` threads (best of 5), on the trainer's device. */
async function peakMatmulGflops(python: string): Promise<number> {
  const script = `
import time, torch
torch.set_num_threads(${THREADS})
device = "cuda" if "${DEVICE}" != "cpu" and torch.cuda.is_available() else "cpu"
n = 2048
a = torch.randn(n, n, device=device); b = torch.randn(n, n, device=device)
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
a @ b; sync()
best = 0.0
for _ in range(5):
    t = time.perf_counter(); reps = 4 if device == "cpu" else 50
    for _ in range(reps): a @ b
    sync(); best = max(best, 2 * n ** 3 * reps / (time.perf_counter() - t))
print(best / 1e9)
`;
  const { stdout } = await execFileAsync(python, ['-c', script], { env: { ...process.env, OMP_NUM_THREADS: String(THREADS) } });
  return Number(stdout.trim());
}

interface AloneRun {
  wallMs: number;
  /** The training loop: first to last step, extrapolated over every step (the first one warms up). */
  loopMs: number;
  steps: number;
  peakRssBytes: number;
}

/** The trainer alone on a spec: lora_train.py --spec, its peak RSS from getrusage at exit, each step timed as its line arrives. */
async function trainAlone(python: string, specPath: string): Promise<AloneRun> {
  const wrapper =
    'import atexit, resource, runpy, sys\n' +
    "atexit.register(lambda: sys.stderr.write('maxrss_kb=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n" +
    `sys.argv = [${JSON.stringify(TRAINER_SCRIPT)}, '--spec', ${JSON.stringify(specPath)}]\n` +
    `runpy.run_path(${JSON.stringify(TRAINER_SCRIPT)}, run_name='__main__')\n`;
  const started = performance.now();
  const child = spawn(python, ['-c', wrapper], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1', OMP_NUM_THREADS: String(THREADS) },
  });
  const stepTimes: number[] = [];
  let failed: string | null = null;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const event = JSON.parse(line) as { type: string; message?: string };
    if (event.type === 'progress') stepTimes.push(performance.now());
    if (event.type === 'failed') failed = event.message ?? 'failed';
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const wallMs = performance.now() - started;
  if (code !== 0 || failed) throw new Error(`the trainer failed (${code}): ${failed ?? stderr.slice(-500)}`);
  const steps = stepTimes.length;
  const loopMs = steps > 1 ? ((stepTimes.at(-1)! - stepTimes[0]!) / (steps - 1)) * steps : wallMs;
  const rss = /maxrss_kb=(\d+)/.exec(stderr);
  return { wallMs, loopMs, steps, peakRssBytes: rss ? Number(rss[1]) * 1024 : NaN };
}

// ---------------------------------------------------------------- the bench

async function main(): Promise<void> {
  const python = process.env.TRAINER_PYTHON || pythonWithTorch();
  if (!python) throw new Error('no python with torch and numpy (apt-get install python3-torch, or TRAINER_PYTHON)');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-trainer-'));
  const modelsDir = path.join(dir, 'models');
  await mkdir(modelsDir);
  const modelFile = path.join(modelsDir, 'qwen-shapes.gguf');
  const postgres = await startPostgres();
  try {
    let t = performance.now();
    const fileBytes = await writeSyntheticModel(modelFile);
    console.log(
      `model: qwen2, hidden ${SHAPE.hidden}, ${SHAPE.layers} layers, ${SHAPE.heads} heads / ${SHAPE.kvHeads} KV, FFN ${SHAPE.ffn}, vocabulary ${SHAPE.vocab}, ` +
        `f16 file ${fmt(fileBytes / 1e6, 0)} MB (written in ${fmt((performance.now() - t) / 1000)} s); ${fmt(MATMUL_PARAMS / 1e6, 0)} M weights in matrix products`,
    );
    const loadAtStart = os.loadavg()[0]!;
    console.log(`trainer: ${python}, device ${DEVICE}, ${THREADS} threads; ${(await execFileAsync(python, [TRAINER_SCRIPT, '--check'])).stdout.trim()}`);

    const server = await startLlamaServer({ modelsDir, threads: THREADS, parallel: 1 });
    const trainer = createPytorchTrainer({ python, threads: THREADS, device: DEVICE });
    const sandbox = await startSandbox({
      databaseUrl: await postgres.createDatabase('trainer_bench'),
      startingBalance: 1_000_000,
      inference: { url: server.url, concurrency: 1, promptStyle: 'completion', benchmarkItems: async () => ITEMS },
      training: {
        trainer,
        adaptersDir: path.join(dir, 'adapters'),
        workDir: path.join(dir, 'training'),
        threads: THREADS,
        baseModelPath: (id) => (id === 'qwen-shapes' ? modelFile : null),
      },
    });
    const platform = createHttpPlatform({ baseUrl: sandbox.url, token: sandbox.token, timeoutMs: 60_000 });
    try {
      t = performance.now();
      const run = await platform.launchRun({ benchmarkId: 'synthetic', modelId: 'qwen-shapes' }, 'bench-run');
      for (;;) {
        const seen = await platform.getRun(run.id);
        if (seen.status === 'failed') throw new Error(`run failed: ${seen.errorMessage}`);
        if (seen.status === 'completed') break;
        await sleep(500);
      }
      console.log(`run of ${QUESTIONS} questions on llama.cpp: ${fmt((performance.now() - t) / 1000)} s`);
      const dataset = await platform.buildDataset({ runId: run.id, augmentation: AUGMENTATION }, 'bench-dataset');

      // Through the platform: from the launch to the training completed (tokenizing, the trainer process, the adapter served).
      t = performance.now();
      const launched = await platform.launchTraining({ datasetId: dataset.id, baseModelId: 'qwen-shapes', epochs: 1 }, 'bench-training');
      for (;;) {
        const seen = await platform.getTraining(launched.id);
        if (seen.status === 'failed') throw new Error(`training failed: ${seen.errorMessage}`);
        if (seen.status === 'completed') break;
        await sleep(200);
      }
      const platformMs = performance.now() - t;

      // The trainer alone on the same spec and tokens, its adapter written elsewhere.
      const work = path.join(dir, 'training', launched.id);
      const spec = JSON.parse(await readFile(path.join(work, 'spec.json'), 'utf8')) as Record<string, unknown>;
      const tokens = (await readFile(String(spec.tokensPath), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { prompt: number[]; completion: number[] });
      const trainedTokens = tokens.reduce((sum, e) => sum + e.prompt.length + e.completion.length, 0);
      const aloneSpec = path.join(dir, 'alone-spec.json');
      // Its tokens are written: the trainer alone reads them at once.
      await writeFile(aloneSpec, JSON.stringify({ ...spec, awaitTokens: false, adapterPath: path.join(dir, 'alone.gguf'), peftAdapterDir: path.join(dir, 'alone.peft') }));
      // The peak just before and just after the trainer alone: on a shared machine the CPU it gets drifts.
      const peakBefore = await peakMatmulGflops(python);
      const alone = await trainAlone(python, aloneSpec);
      const peakAfter = await peakMatmulGflops(python);
      const peak = (peakBefore + peakAfter) / 2;

      const loopSeconds = alone.loopMs / 1000;
      const flops = (4 * MATMUL_PARAMS * trainedTokens) / loopSeconds;
      const rssTarget = 1.5 * fileBytes + 1e9;
      console.log(`one epoch: ${tokens.length} examples, ${trainedTokens} tokens, ${alone.steps} steps`);
      report('trainer tokens/s (training loop)', fmt(trainedTokens / loopSeconds, 1));
      report('plain matmul peak (2048x2048 f32)', `${fmt(peak, 1)} GFLOP/s (${fmt(peakBefore, 1)} before, ${fmt(peakAfter, 1)} after)`);
      report('trainer FLOP/s (4 x weights x tokens / loop)', `${fmt(flops / 1e9, 1)} GFLOP/s = ${fmt((100 * flops) / 1e9 / peak, 0)}% of peak (target >= 40%)`);
      report('trainer peak RSS', `${fmt(alone.peakRssBytes / 1e9, 2)} GB (target <= ${fmt(rssTarget / 1e9, 2)} GB = 1.5 x file + 1 GB)`);
      report('trainer alone, wall', `${fmt(alone.wallMs / 1000, 1)} s`);
      report('load average (1 min), start / end', `${fmt(loadAtStart, 1)} / ${fmt(os.loadavg()[0]!, 1)} on ${os.cpus().length} cores`);
      report('through the platform, launch to completed', `${fmt(platformMs / 1000, 1)} s = ${fmt((100 * platformMs) / alone.wallMs, 0)}% of alone (target <= 110%)`);
    } finally {
      await sandbox.stop();
      await server.close();
    }
  } finally {
    await postgres.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
