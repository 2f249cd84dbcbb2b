// The platform's benchmark endpoints: the built-in catalogue, BENCHMARKS_DIR files, and uploads (POST /benchmarks).
import type { IncomingHttpHeaders } from 'node:http';
import { BenchmarkUploadRequestSchema, describeZodError, type BenchmarkWire, type ErrorBodyWire } from '@verdict/contract/contract';
import { describeFormat, fileBenchmarkToWire, formatBenchmarkErrors, type BenchmarkFileError, type BenchmarkFormatReport } from '../benchmarks/index.js';
import { BENCHMARKS } from './catalogue.js';
import type { SandboxContext } from './context.js';
import { SandboxApiError, benchmarkToWire, requireBenchmark, type Reply } from './replies.js';
import { findBenchmark } from './catalogue.js';

/** Largest benchmark upload accepted, as JSONL text. */
export const MAX_BENCHMARK_UPLOAD_BYTES = 10_000_000;

/** Run price per 1,000 tokens quoted for file benchmarks when no inference engine is configured. */
const QUOTE_CREDITS_PER_1K_TOKENS = 0.1;

/** Content types whose body is the JSONL file itself (anything else is read as JSON). */
const JSONL_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'text/plain'];

export function isJsonlBody(headers: IncomingHttpHeaders): boolean {
  const type = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return JSONL_TYPES.includes(type);
}


/** A 422 whose body lists each bad line: `error.details` extends the contract's error shape. */
function invalidFile(what: string, errors: BenchmarkFileError[], format?: BenchmarkFormatReport): Reply {
  const shown = formatBenchmarkErrors(errors.slice(0, 20));
  const more = errors.length > 20 ? `\n(and ${errors.length - 20} more listed in details)` : '';
  const readAs = format ? ` (${describeFormat(format)})` : '';
  const body: ErrorBodyWire & { error: { details: BenchmarkFileError[] } } = {
    error: { code: 'invalid_request', message: `${what}${readAs} is refused whole:\n${shown}${more}`, details: errors },
  };
  return { status: 422, body };
}

function quoteRate(ctx: SandboxContext): number {
  return ctx.inference?.creditsPer1kTokens ?? QUOTE_CREDITS_PER_1K_TOKENS;
}

export async function listBenchmarks(ctx: SandboxContext): Promise<Reply> {
  const files = await ctx.benchmarks.list();
  const items: BenchmarkWire[] = [...BENCHMARKS.map(benchmarkToWire), ...files.benchmarks.map((b) => fileBenchmarkToWire(b, quoteRate(ctx)))];
  const invalid = files.invalid.map((f) => ({ id: f.id, file_name: f.fileName, errors: f.errors, ...(f.format ? { read_as: describeFormat(f.format) } : {}) }));
  return { status: 200, body: { items, ...(invalid.length > 0 ? { invalid } : {}) } };
}

export async function getBenchmark(ctx: SandboxContext, id: string): Promise<Reply> {
  if (findBenchmark(id)) return { status: 200, body: benchmarkToWire(requireBenchmark(id)) };
  const found = await ctx.benchmarks.get(id);
  if (!found) throw new SandboxApiError(404, 'not_found', `benchmark ${id} not found`);
  if (!('items' in found)) return invalidFile(`benchmark file ${found.fileName} in BENCHMARKS_DIR`, found.errors, found.format);
  return { status: 200, body: fileBenchmarkToWire(found, quoteRate(ctx)) };
}

/**
 * `POST /benchmarks`: the JSONL file as the body (a JSONL content type, `?id=` and optional
 * `?file_name=`), or JSON `{ id, file_name?, content }`. 201 stored, 200 the same file again,
 * 422 with every bad line, 409 when the id holds other questions.
 */
export async function uploadBenchmark(ctx: SandboxContext, request: { url: URL; headers: IncomingHttpHeaders; body: unknown; raw: string }): Promise<Reply> {
  let id: string | null;
  let fileName: string | undefined;
  let text: string;
  if (isJsonlBody(request.headers)) {
    id = request.url.searchParams.get('id');
    fileName = request.url.searchParams.get('file_name') ?? undefined;
    text = request.raw;
    if (!id) throw new SandboxApiError(400, 'invalid_request', 'the id query parameter is required: POST /benchmarks?id=<benchmark id> with the JSONL file as the body');
  } else {
    const parsed = BenchmarkUploadRequestSchema.safeParse(request.body ?? {});
    if (!parsed.success) throw new SandboxApiError(422, 'invalid_request', `invalid body: ${describeZodError(parsed.error)}`);
    ({ id, content: text } = parsed.data);
    fileName = parsed.data.file_name;
  }
  const outcome = await ctx.benchmarks.upload({ id, text, ...(fileName ? { fileName } : {}) });
  switch (outcome.status) {
    case 'invalid':
      return invalidFile(`benchmark file ${fileName ?? `${id}.jsonl`}`, outcome.errors, outcome.format);
    case 'conflict':
      throw new SandboxApiError(409, 'invalid_request', outcome.message);
    case 'created':
    case 'unchanged':
      ctx.logger.info({ benchmarkId: id, questions: outcome.benchmark.items.length, status: outcome.status }, 'benchmark uploaded');
      return { status: outcome.status === 'created' ? 201 : 200, body: fileBenchmarkToWire(outcome.benchmark, quoteRate(ctx)) };
  }
}
