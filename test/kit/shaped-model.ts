// Random-weight GGUF models with a real model's layer shapes (test/kit/gguf_shapes.py), for benches that measure cost, not quality.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { STORIES_MODEL_FILE } from './engines.js';

/** The shape fields gguf_shapes.py takes; unset ones are Qwen2.5-0.5B's. */
export interface ModelShape {
  n_embd?: number;
  n_layer?: number;
  n_head?: number;
  n_head_kv?: number;
  n_ff?: number;
  n_vocab?: number;
  context?: number;
}

const WRITER = path.resolve(import.meta.dirname, 'gguf_shapes.py');

/** A python with numpy: TRAINER_PYTHON, else Debian's (the first python3 on PATH may lack it). */
function numpyPython(): string {
  return process.env.TRAINER_PYTHON ?? '/usr/bin/python3';
}

/**
 * The path of a random-weight qwen2 GGUF with `shape` (default: Qwen2.5-0.5B's, about 1 GB in f16), written once
 * into a cache folder (BENCH_MODEL_CACHE, default the system temp folder) and reused after.
 */
export async function shapedModel(name: string, shape: ModelShape = {}): Promise<string> {
  const dir = process.env.BENCH_MODEL_CACHE ?? path.join(os.tmpdir(), 'verdict-shaped-models');
  await mkdir(dir, { recursive: true });
  // The writer's source and the shape name the file: a changed writer or shape writes a new one.
  const key = createHash('sha256').update(await readFile(WRITER)).update(JSON.stringify(shape)).digest('hex').slice(0, 12);
  const file = path.join(dir, `${name}-${key}.gguf`);
  if (await stat(file).then((s) => s.size > 0, () => false)) return file;
  const partial = `${file}.partial-${process.pid}`;
  await promisify(execFile)(numpyPython(), [WRITER, STORIES_MODEL_FILE, partial, JSON.stringify(shape)], { maxBuffer: 1 << 20 });
  await rename(partial, file);
  return file;
}
