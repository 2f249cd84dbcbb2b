// The bundled trainer's adapter in the Hugging Face PEFT layout (what vLLM and SGLang load), read back with readers written here, and TRAINER_DEVICE.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAINER_SCRIPT, createPytorchTrainer } from '@verdict/platform/engines/pytorch-trainer';
import { DEFAULT_LORA_HYPERPARAMETERS, peftAdapterDir, type TrainerEvent, type TrainingSpec } from '@verdict/platform/engines/trainer';
import { peftFolderProblem } from '../../kit/fakes/inference-backend.js';
import { pythonWithTorch, STORIES_MODEL_FILE } from '../../kit/engines.js';

const execFileAsync = promisify(execFile);
const PYTHON = pythonWithTorch();
const skipWhy = !PYTHON
  ? 'no python with torch and numpy here (tried TRAINER_PYTHON, python3, /usr/bin/python3); install it with `apt-get install -y python3-torch`'
  : null;
if (skipWhy) console.warn(`[peft-adapter] SKIPPED the PEFT adapter tests: ${skipWhy}`);

// stories260K: llama, 5 blocks, 8 query heads and 4 KV heads of 8 dimensions (q: 64 rows, k: 32 rows).
const N_LAYER = 5;
const N_HEAD = 8;
const N_HEAD_KV = 4;
const TARGETS = ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_down'];
const HF = { attn_q: 'self_attn.q_proj', attn_k: 'self_attn.k_proj', attn_v: 'self_attn.v_proj', attn_output: 'self_attn.o_proj', ffn_down: 'mlp.down_proj' } as const;

interface Tensor {
  shape: number[];
  data: Float32Array;
}

/**
 * A safetensors reader, checking what the format requires: an 8-byte little-endian header length
 * within the file, a JSON header of {dtype, shape, data_offsets} (offsets from the end of the header),
 * F32 data whose length matches its shape, and a data area covered exactly, without holes or overlaps.
 */
function readSafetensors(buffer: Buffer): { tensors: Map<string, Tensor>; metadata: unknown; headerLength: number } {
  const length = Number(buffer.readBigUInt64LE(0));
  if (length > buffer.length - 8) throw new Error('header length beyond the file');
  const header = JSON.parse(buffer.subarray(8, 8 + length).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const start = 8 + length;
  const tensors = new Map<string, Tensor>();
  const ranges: Array<[number, number]> = [];
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    if (info.dtype !== 'F32') throw new Error(`${name}: dtype ${info.dtype}`);
    const [begin, end] = info.data_offsets;
    const count = info.shape.reduce((a, b) => a * b, 1);
    if (end - begin !== count * 4) throw new Error(`${name}: ${end - begin} bytes for shape ${info.shape.join('x')}`);
    ranges.push([begin, end]);
    const bytes = buffer.subarray(start + begin, start + end);
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = bytes.readFloatLE(i * 4);
    tensors.set(name, { shape: info.shape, data });
  }
  ranges.sort((a, b) => a[0] - b[0]);
  let at = 0;
  for (const [begin, end] of ranges) {
    if (begin !== at) throw new Error(`a hole or an overlap at byte ${at} of the data`);
    at = end;
  }
  if (start + at !== buffer.length) throw new Error(`the data is ${buffer.length - start} bytes, the tensors cover ${at}`);
  return { tensors, metadata: (header as Record<string, unknown>).__metadata__, headerLength: length };
}

/** A GGUF v3 reader for an adapter's F32 tensors (metadata values skipped by type), numpy shape (ggml's ne reversed). */
function readGgufTensors(buffer: Buffer): Map<string, Tensor> {
  let at = 0;
  const u32 = () => ((at += 4), buffer.readUInt32LE(at - 4));
  const u64 = () => ((at += 8), Number(buffer.readBigUInt64LE(at - 8)));
  const str = () => {
    const n = u64();
    at += n;
    return buffer.subarray(at - n, at).toString('utf8');
  };
  const SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skip = (type: number): void => {
    if (type === 8) str();
    else if (type === 9) {
      const item = u32();
      const count = u64();
      for (let i = 0; i < count; i++) skip(item);
    } else at += SIZES[type]!;
  };
  if (buffer.subarray(0, 4).toString('latin1') !== 'GGUF') throw new Error('not GGUF');
  at = 4;
  expect(u32()).toBe(3);
  const nTensors = u64();
  const nKv = u64();
  for (let i = 0; i < nKv; i++) {
    str();
    skip(u32());
  }
  const infos: Array<{ name: string; ne: number[]; offset: number }> = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const ne = Array.from({ length: u32() }, () => u64());
    expect(u32()).toBe(0); // F32
    infos.push({ name, ne, offset: u64() });
  }
  const dataStart = Math.ceil(at / 32) * 32;
  const tensors = new Map<string, Tensor>();
  for (const { name, ne, offset } of infos) {
    const count = ne.reduce((a, b) => a * b, 1);
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = buffer.readFloatLE(dataStart + offset + i * 4);
    tensors.set(name, { shape: [...ne].reverse(), data });
  }
  return tensors;
}

/**
 * llama.cpp's converter permutation of q/k rows (convert_hf_to_gguf.py, LlamaModel.permute: reshape to
 * (heads, 2, rows/heads/2, cols), swap axes 1 and 2): GGUF row h*d + 2i + j is Hugging Face row h*d + j*d/2 + i.
 */
function permuteRows(hf: Tensor, heads: number): Tensor {
  const [rows, cols] = hf.shape as [number, number];
  const d = rows / heads;
  const out = new Float32Array(hf.data.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < d / 2; i++) {
      for (let j = 0; j < 2; j++) {
        const gguf = h * d + 2 * i + j;
        const source = h * d + j * (d / 2) + i;
        out.set(hf.data.subarray(source * cols, (source + 1) * cols), gguf * cols);
      }
    }
  }
  return { shape: hf.shape, data: out };
}

const same = (a: Tensor, b: Tensor) => a.shape.join('x') === b.shape.join('x') && a.data.every((v, i) => v === b.data[i]);

describe.skipIf(skipWhy !== null)('the PEFT adapter the bundled trainer writes (stories260K, CPU)', () => {
  let dir: string;
  let spec: TrainingSpec;
  let done: Extract<TrainerEvent, { type: 'completed' | 'failed' }>;
  const logged: Array<{ obj: object; msg?: string }> = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-peft-'));
    const datasetPath = path.join(dir, 'dataset.jsonl');
    const lines = [
      { prompt: 'Once upon a time, there was a big', completion: ' bear' },
      { prompt: 'The dog was very', completion: ' excited' },
      { prompt: 'Ben liked to eat', completion: ' food' },
    ];
    await writeFile(datasetPath, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    spec = {
      jobId: 'trn_peft',
      baseModelPath: STORIES_MODEL_FILE,
      baseModelId: 'stories260K',
      datasetPath,
      adapterPath: path.join(dir, 'adapters', 'trn_peft.gguf'),
      workDir: path.join(dir, 'work'),
      hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, targetModules: TARGETS, epochs: 2 },
      threads: 1,
    };
    const logger = { info: (obj: object, msg?: string) => logged.push({ obj, ...(msg ? { msg } : {}) }), warn: () => undefined, error: () => undefined };
    const trainer = createPytorchTrainer({ python: PYTHON!, threads: 1, device: 'cpu', logger });
    done = await (await trainer.start(spec, () => undefined)).done;
  }, 180_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes adapter_config.json and adapter_model.safetensors beside the GGUF, computing on the CPU as TRAINER_DEVICE=cpu asks', async () => {
    expect(done.type).toBe('completed');
    const folder = peftAdapterDir(spec.adapterPath);
    expect(folder).toBe(path.join(dir, 'adapters', 'trn_peft.peft'));
    const config = JSON.parse(await readFile(path.join(folder, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: 'stories260K',
      r: 4,
      lora_alpha: 8,
      bias: 'none',
      use_rslora: false,
      use_dora: false,
      target_modules: ['down_proj', 'k_proj', 'o_proj', 'q_proj', 'v_proj'],
    });
    expect(logged.find((l) => l.msg === 'trainer computing')?.obj).toMatchObject({ device: 'cpu' });
    // What vLLM and SGLang check before loading (the fakes' rules) passes.
    expect(await peftFolderProblem(folder)).toBeNull();
  });

  it('the safetensors file parses with an independent reader: PEFT names for every layer and module, A (rank, in) and B (out, rank)', async () => {
    const buffer = await readFile(path.join(peftAdapterDir(spec.adapterPath), 'adapter_model.safetensors'));
    const { tensors, metadata, headerLength } = readSafetensors(buffer);
    expect(headerLength % 8).toBe(0);
    expect(metadata).toEqual({ format: 'pt' });
    const expected: string[] = [];
    for (let layer = 0; layer < N_LAYER; layer++) {
      for (const module of TARGETS) {
        for (const ab of ['A', 'B']) expected.push(`base_model.model.model.layers.${layer}.${HF[module as keyof typeof HF]}.lora_${ab}.weight`);
      }
    }
    expect([...tensors.keys()].sort()).toEqual(expected.sort());
    expect(tensors.get('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight')!.shape).toEqual([4, 64]);
    expect(tensors.get('base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight')!.shape).toEqual([64, 4]);
    expect(tensors.get('base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight')!.shape).toEqual([32, 4]);
    expect(tensors.get('base_model.model.model.layers.0.mlp.down_proj.lora_A.weight')!.shape).toEqual([4, 172]);
  });

  it('is the GGUF adapter with q and k rows in the Hugging Face order: B of q and k permuted as llama.cpp converts, everything else equal', async () => {
    const peft = readSafetensors(await readFile(path.join(peftAdapterDir(spec.adapterPath), 'adapter_model.safetensors'))).tensors;
    const gguf = readGgufTensors(await readFile(spec.adapterPath));
    let permutedDiffers = 0;
    for (let layer = 0; layer < N_LAYER; layer++) {
      for (const module of TARGETS) {
        const name = `base_model.model.model.layers.${layer}.${HF[module as keyof typeof HF]}`;
        const a = peft.get(`${name}.lora_A.weight`)!;
        const b = peft.get(`${name}.lora_B.weight`)!;
        const ggufA = gguf.get(`blk.${layer}.${module}.weight.lora_a`)!;
        const ggufB = gguf.get(`blk.${layer}.${module}.weight.lora_b`)!;
        expect(same(a, ggufA)).toBe(true);
        expect(b.data.some((v) => v !== 0)).toBe(true); // trained
        if (module === 'attn_q' || module === 'attn_k') {
          expect(same(permuteRows(b, module === 'attn_q' ? N_HEAD : N_HEAD_KV), ggufB)).toBe(true);
          if (!same(b, ggufB)) permutedDiffers++;
        } else {
          expect(same(b, ggufB)).toBe(true);
        }
      }
    }
    // The order matters: the PEFT rows of q and k are not the GGUF's.
    expect(permutedDiffers).toBe(2 * N_LAYER);
  });

  it('un-permuting is the inverse of llama.cpp\'s permutation (multi-head attention and grouped KV heads, matrices and vectors)', async () => {
    const script = [
      'import sys, json, numpy as np',
      `sys.path.insert(0, ${JSON.stringify(path.dirname(TRAINER_SCRIPT))})`,
      'from peft_folder import permute_rows, unpermute_rows',
      'rng = np.random.default_rng(1)',
      'ok = []',
      'for shape, heads in (((64, 4), 8), ((32, 4), 4), ((64,), 8), ((128, 3), 2)):',
      '    x = rng.standard_normal(shape).astype(np.float32)',
      '    ok.append(bool(np.array_equal(unpermute_rows(permute_rows(x, heads), heads), x)))',
      '    ok.append(bool(np.array_equal(permute_rows(unpermute_rows(x, heads), heads), x)))',
      '    ok.append(not np.array_equal(permute_rows(x, heads), x))',
      // Row 1 of head 0 in GGUF order is row d/2 in the Hugging Face order.
      'x = np.arange(16, dtype=np.float32).reshape(16, 1)',
      'print(json.dumps({"ok": ok, "gguf": permute_rows(x, 2)[:, 0].astype(int).tolist()}))',
    ].join('\n');
    const { stdout } = await execFileAsync(PYTHON!, ['-c', script]);
    const out = JSON.parse(stdout) as { ok: boolean[]; gguf: number[] };
    expect(out.ok).toEqual(Array(12).fill(true));
    expect(out.gguf).toEqual([0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]);
  });
});

describe.skipIf(!PYTHON)('TRAINER_DEVICE', () => {
  it('cuda on a machine whose torch has none: availability and the launch say so, naming TRAINER_DEVICE; auto falls back to the CPU', async () => {
    const { stdout } = await execFileAsync(PYTHON!, [TRAINER_SCRIPT, '--check']);
    const check = JSON.parse(stdout) as { cuda: boolean };
    if (check.cuda) {
      console.warn('[peft-adapter] SKIPPED the missing-CUDA check: this machine has CUDA');
      return;
    }
    const cuda = createPytorchTrainer({ python: PYTHON!, threads: 1, device: 'cuda' });
    const available = await cuda.availability();
    expect(available).toMatchObject({ ok: false, kind: 'settings' });
    expect(available.ok ? '' : available.reason).toMatch(/^TRAINER_DEVICE=cuda, but the torch of .* finds no CUDA GPU .*set TRAINER_DEVICE=cpu or auto/);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-cuda-'));
    const job = await cuda.start(
      {
        jobId: 'trn_cuda',
        baseModelPath: STORIES_MODEL_FILE,
        datasetPath: path.join(dir, 'none.jsonl'),
        adapterPath: path.join(dir, 'a.gguf'),
        workDir: dir,
        hyperparameters: DEFAULT_LORA_HYPERPARAMETERS,
        threads: 1,
      },
      () => undefined,
    );
    expect(await job.done).toEqual({ type: 'failed', message: available.ok ? '' : available.reason });

    const auto = createPytorchTrainer({ python: PYTHON!, threads: 1 });
    expect(await auto.availability()).toEqual({ ok: true });
    expect(auto.label).toBe('PyTorch LoRA, CPU, 1 thread');
    await rm(dir, { recursive: true, force: true });
  });

  it('the trainer itself refuses device cuda without CUDA (a Ray node), and an unknown device, as failed events', async () => {
    const { stdout } = await execFileAsync(PYTHON!, [TRAINER_SCRIPT, '--check']);
    if ((JSON.parse(stdout) as { cuda: boolean }).cuda) {
      console.warn('[peft-adapter] SKIPPED the trainer\'s missing-CUDA check: this machine has CUDA');
      return;
    }
    const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-cuda-'));
    const run = async (device: string) => {
      const specPath = path.join(dir, `${device}.json`);
      await writeFile(specPath, JSON.stringify({ baseModelPath: '/x.gguf', tokensPath: '/x.jsonl', adapterPath: path.join(dir, 'a.gguf'), device }));
      const result = await execFileAsync(PYTHON!, [TRAINER_SCRIPT, '--spec', specPath]).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
      return { code: result.code, events: result.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; message?: string }) };
    };
    const cuda = await run('cuda');
    expect(cuda.code).toBe(2);
    expect(cuda.events.at(-1)).toMatchObject({ type: 'failed', message: expect.stringMatching(/^TRAINER_DEVICE=cuda, but .*; set TRAINER_DEVICE=cpu or auto$/) });
    const gpu = await run('gpu');
    expect(gpu.events.at(-1)).toMatchObject({ type: 'failed', message: "device must be one of auto, cpu, cuda, got 'gpu' (TRAINER_DEVICE)" });
    await rm(dir, { recursive: true, force: true });
  });
});
