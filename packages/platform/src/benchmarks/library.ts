// The platform's file benchmarks: BENCHMARKS_DIR (re-read when a file changes) and uploads stored in Postgres.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { readBenchmarkFile, sha256, type FileBenchmark, type InvalidBenchmarkFile } from './directory.js';
import { BENCHMARK_ID_PATTERN, parseBenchmarkJsonl, type BenchmarkFileError, type BenchmarkItem } from './format.js';
import { formatReport, type BenchmarkFormatReport } from './formats.js';

export type UploadOutcome =
  | { status: 'created' | 'unchanged'; benchmark: FileBenchmark }
  | { status: 'invalid'; errors: BenchmarkFileError[]; format?: BenchmarkFormatReport }
  | { status: 'conflict'; message: string };

export interface BenchmarkLibrary {
  /** Every valid file benchmark (directory first, then uploads), and the directory's refused files. */
  list(): Promise<{ benchmarks: FileBenchmark[]; invalid: InvalidBenchmarkFile[] }>;
  /** A file benchmark, a refused directory file (with its errors), or null when neither has this id. */
  get(id: string): Promise<FileBenchmark | InvalidBenchmarkFile | null>;
  /** A valid file benchmark's questions, or null. */
  items(id: string): Promise<BenchmarkItem[] | null>;
  /**
   * Stores an uploaded benchmark under `id`. The same id with the same content again is `unchanged`;
   * another content under a taken id (an upload, a directory file or a built-in benchmark) is a `conflict`.
   */
  upload(input: { id: string; fileName?: string; text: string }): Promise<UploadOutcome>;
}

export interface BenchmarkLibraryOptions {
  pool: pg.Pool;
  /** BENCHMARKS_DIR; unset = uploads only. */
  dir?: string;
  /** Ids taken by benchmarks outside this library (the built-in catalogue). */
  isReserved?: (id: string) => boolean;
}

interface UploadRow {
  id: string;
  file_name: string;
  sha256: string;
  items: BenchmarkItem[];
  format: BenchmarkFormatReport | null;
  created_at: Date;
}

/** Idempotent DDL of the uploads table, run by the sandbox schema migrations. */
export const BENCHMARK_UPLOADS_DDL = `
  CREATE TABLE IF NOT EXISTS sandbox.benchmark_uploads (
    id text PRIMARY KEY,
    file_name text NOT NULL,
    sha256 text NOT NULL,
    question_count int NOT NULL,
    items jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  );
`;

function fromRow(row: UploadRow): FileBenchmark {
  // Uploads stored before formats were detected were all ours.
  return { id: row.id, source: 'upload', fileName: row.file_name, sha256: row.sha256, items: row.items, format: row.format ?? formatReport('ours'), updatedAt: row.created_at };
}

export function createBenchmarkLibrary(options: BenchmarkLibraryOptions): BenchmarkLibrary {
  const { pool, dir } = options;
  const cache = new Map<string, { mtimeMs: number; size: number; read: FileBenchmark | InvalidBenchmarkFile }>();

  async function readDirFile(id: string): Promise<FileBenchmark | InvalidBenchmarkFile | null> {
    if (!dir || !BENCHMARK_ID_PATTERN.test(id)) return null;
    const fileName = `${id}.jsonl`;
    const path = join(dir, fileName);
    let info;
    try {
      info = await stat(path);
    } catch {
      cache.delete(id);
      return null;
    }
    const cached = cache.get(id);
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.read;
    const read = await readBenchmarkFile(path, id, fileName);
    cache.set(id, { mtimeMs: info.mtimeMs, size: info.size, read });
    return read;
  }

  async function dirIds(): Promise<string[]> {
    if (!dir) return [];
    const names = await readdir(dir).catch(() => [] as string[]);
    return names.filter((n) => n.toLowerCase().endsWith('.jsonl')).map((n) => n.slice(0, -'.jsonl'.length)).sort();
  }

  async function upload(id: string): Promise<FileBenchmark | null> {
    const result = await pool.query<UploadRow>('SELECT id, file_name, sha256, items, format, created_at FROM sandbox.benchmark_uploads WHERE id = $1', [id]);
    return result.rows[0] ? fromRow(result.rows[0]) : null;
  }

  async function get(id: string): Promise<FileBenchmark | InvalidBenchmarkFile | null> {
    return (await readDirFile(id)) ?? (await upload(id));
  }

  return {
    async list() {
      const benchmarks: FileBenchmark[] = [];
      const invalid: InvalidBenchmarkFile[] = [];
      for (const id of await dirIds()) {
        const read = await readDirFile(id);
        if (!read) continue;
        if ('items' in read) benchmarks.push(read);
        else invalid.push(read);
      }
      const seen = new Set(benchmarks.map((b) => b.id));
      const uploads = await pool.query<UploadRow>('SELECT id, file_name, sha256, items, format, created_at FROM sandbox.benchmark_uploads ORDER BY created_at, id');
      for (const row of uploads.rows) if (!seen.has(row.id)) benchmarks.push(fromRow(row));
      return { benchmarks, invalid };
    },
    get,
    async items(id) {
      const found = await get(id);
      return found && 'items' in found ? found.items : null;
    },
    async upload(input) {
      const parsed = parseBenchmarkJsonl(input.text, input.id);
      if (!parsed.ok) return { status: 'invalid', errors: parsed.errors, ...(parsed.format ? { format: parsed.format } : {}) };
      const digest = sha256(input.text);
      const taken = (by: string) => ({ status: 'conflict' as const, message: `benchmark id ${input.id} is taken by ${by}; upload under another id` });
      if (options.isReserved?.(input.id)) return taken('a built-in benchmark');
      const fromDir = await readDirFile(input.id);
      if (fromDir) {
        if ('items' in fromDir && fromDir.sha256 === digest) return { status: 'unchanged', benchmark: fromDir };
        return taken(`the file ${fromDir.fileName} in BENCHMARKS_DIR`);
      }
      const inserted = await pool.query<UploadRow>(
        `INSERT INTO sandbox.benchmark_uploads (id, file_name, sha256, question_count, items, format)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)
         ON CONFLICT (id) DO NOTHING
         RETURNING id, file_name, sha256, items, format, created_at`,
        [input.id, input.fileName ?? `${input.id}.jsonl`, digest, parsed.items.length, JSON.stringify(parsed.items), JSON.stringify(parsed.format)],
      );
      if (inserted.rows[0]) return { status: 'created', benchmark: fromRow(inserted.rows[0]) };
      const existing = (await upload(input.id))!;
      if (existing.sha256 === digest) return { status: 'unchanged', benchmark: existing };
      return taken('an earlier upload with other questions');
    },
  };
}
