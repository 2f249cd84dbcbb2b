// BENCHMARKS_DIR: every `<id>.jsonl` file is a benchmark, read whole and validated whole.
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BENCHMARK_ID_PATTERN, parseBenchmarkJsonl, type BenchmarkFileError, type BenchmarkItem } from './format.js';
import type { BenchmarkFormatReport } from './formats.js';

/** Largest benchmark file read (a file or an upload). */
export const MAX_BENCHMARK_FILE_BYTES = 20_000_000;

export interface FileBenchmark {
  id: string;
  /** Where it came from: `directory` (BENCHMARKS_DIR) or `upload` (the API). */
  source: 'directory' | 'upload';
  /** The file name it was read from, or the name it was uploaded under. */
  fileName: string;
  sha256: string;
  items: BenchmarkItem[];
  /** The format the file was read as, and how its fields became ours. */
  format: BenchmarkFormatReport;
  /** When the file was last written, or the upload stored. */
  updatedAt: Date;
}

export interface InvalidBenchmarkFile {
  id: string;
  fileName: string;
  errors: BenchmarkFileError[];
  /** The format the file was read as, when one was detected. */
  format?: BenchmarkFormatReport;
}

export interface BenchmarksDir {
  benchmarks: FileBenchmark[];
  /** Files refused whole, each with every bad line named. */
  invalid: InvalidBenchmarkFile[];
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Reads one benchmark file; a file over the size limit or not UTF-8 text is refused with a line-0 error. */
export async function readBenchmarkFile(path: string, id: string, fileName: string): Promise<FileBenchmark | InvalidBenchmarkFile> {
  const info = await stat(path);
  if (info.size > MAX_BENCHMARK_FILE_BYTES) {
    return { id, fileName, errors: [{ line: 0, message: `the file is ${info.size} bytes; at most ${MAX_BENCHMARK_FILE_BYTES} are read` }] };
  }
  const text = await readFile(path, 'utf8');
  const parsed = parseBenchmarkJsonl(text, id);
  if (!parsed.ok) return { id, fileName, errors: parsed.errors, ...(parsed.format ? { format: parsed.format } : {}) };
  return { id, source: 'directory', fileName, sha256: sha256(text), items: parsed.items, format: parsed.format, updatedAt: info.mtime };
}

/**
 * Loads every `*.jsonl` file of `dir` (the file name without `.jsonl` is the benchmark id). A bad
 * file does not stop the others: it is listed in `invalid` with its errors. Other files are ignored.
 */
export async function loadBenchmarksDir(dir: string): Promise<BenchmarksDir> {
  const names = (await readdir(dir)).filter((name) => name.toLowerCase().endsWith('.jsonl')).sort();
  const result: BenchmarksDir = { benchmarks: [], invalid: [] };
  for (const fileName of names) {
    const id = fileName.slice(0, -'.jsonl'.length);
    if (!BENCHMARK_ID_PATTERN.test(id)) {
      result.invalid.push({ id, fileName, errors: [{ line: 0, field: 'file name', message: `${JSON.stringify(id)} is not a valid benchmark id (letters, digits, '.', '_', '-')` }] });
      continue;
    }
    const read = await readBenchmarkFile(join(dir, fileName), id, fileName);
    if ('items' in read) result.benchmarks.push(read);
    else result.invalid.push(read);
  }
  return result;
}
