// Real engines in tests: the stories260K model in the test kit, a python with or without PyTorch, folders of models and benchmarks.
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TRAINER_SCRIPT } from '@verdict/platform/engines/pytorch-trainer';

/** stories260K.gguf, committed beside the test kit (test/kit/models/README.md: what it is, its source and licence). */
export const STORIES_MODEL_FILE: string = path.resolve(import.meta.dirname, 'models/stories260K.gguf');

/** Benchmark 501, the fixture the loops on stories260K run. */
export const BENCHMARK_501_FILE = path.resolve(import.meta.dirname, '../e2e/fixtures/benchmarks/501.jsonl');

/** The first of TRAINER_PYTHON, python3 and /usr/bin/python3 that passes the trainer's own check (torch and numpy installed), or null. */
export function pythonWithTorch(): string | null {
  for (const python of [process.env.TRAINER_PYTHON, 'python3', '/usr/bin/python3']) {
    if (!python) continue;
    try {
      execFileSync(python, [TRAINER_SCRIPT, '--check'], { stdio: 'ignore', timeout: 60_000 });
      return python;
    } catch {
      // next one
    }
  }
  return null;
}

/** A python without torch (the first on PATH here is pyenv's), to show what a user without it reads; null when every one has it. */
export function pythonWithoutTorch(): string | null {
  for (const python of ['python3', 'python']) {
    try {
      execFileSync(python, [TRAINER_SCRIPT, '--check'], { stdio: 'ignore', timeout: 60_000 });
    } catch (error) {
      if ((error as { status?: number }).status === 1) return python;
    }
  }
  return null;
}

export interface StoriesFolders {
  root: string;
  /** Holds stories260K.gguf. */
  modelsDir: string;
  /** Holds 501.jsonl. */
  benchmarksDir: string;
}

/** A new temporary folder (named from `prefix`) with stories260K.gguf in models/ and benchmark 501 in benchmarks/. */
export async function storiesFolders(prefix: string): Promise<StoriesFolders> {
  const root = await mkdtemp(path.join(os.tmpdir(), prefix));
  return withStories(root, path.join(root, 'models'));
}

export interface RayStoriesFolders extends StoriesFolders {
  /** The storage the platform and the cluster share; models/ is in it. */
  shared: string;
  /** The shared folder as the fake cluster's nodes mount it (a symlink: another path, the same storage). */
  clusterMount: string;
}

/** As storiesFolders, with models/ in a shared/ folder that the fake Ray cluster mounts as cluster-mount/. */
export async function rayStoriesFolders(prefix: string): Promise<RayStoriesFolders> {
  const root = await mkdtemp(path.join(os.tmpdir(), prefix));
  const shared = path.join(root, 'shared');
  const clusterMount = path.join(root, 'cluster-mount');
  const folders = await withStories(root, path.join(shared, 'models'));
  await symlink(shared, clusterMount);
  return { ...folders, shared, clusterMount };
}

async function withStories(root: string, modelsDir: string): Promise<StoriesFolders> {
  const benchmarksDir = path.join(root, 'benchmarks');
  await mkdir(modelsDir, { recursive: true });
  await mkdir(benchmarksDir);
  await copyFile(STORIES_MODEL_FILE, path.join(modelsDir, 'stories260K.gguf'));
  await copyFile(BENCHMARK_501_FILE, path.join(benchmarksDir, '501.jsonl'));
  return { root, modelsDir, benchmarksDir };
}

/**
 * CPU threads for llama.cpp and PyTorch in tests: one. The suite runs two files at a time on two
 * cores, and llama.cpp's threads spin-wait for each other: with a core taken, 60 tokens of
 * stories260K took 27-35 s on 2 threads against 0.5-1.2 s on 1 (measured under load, 2026-12-04).
 * Users set ENGINE_THREADS to their cores; the tests check behaviour, not speed.
 */
export const TEST_ENGINE_THREADS = 1;
