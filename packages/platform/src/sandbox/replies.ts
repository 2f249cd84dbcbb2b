// The sandbox API's errors and replies, and the catalogue lookups every operation answers with.
import type { ApiErrorCode, BenchmarkWire } from '@verdict/contract/contract';
import { categoryCounts, findBenchmark, type BenchmarkDefinition } from './catalogue.js';

export class SandboxApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export const notFound = (what: string) => new SandboxApiError(404, 'not_found', `${what} not found`);
export const unprocessable = (message: string) => new SandboxApiError(422, 'invalid_request', message);

// ---------------------------------------------------------------- catalogue views

export function benchmarkToWire(benchmark: BenchmarkDefinition): BenchmarkWire {
  return {
    id: benchmark.id,
    name: benchmark.name,
    description: benchmark.description,
    question_count: benchmark.questionCount,
    categories: categoryCounts(benchmark).map((c) => ({ name: c.name, question_count: c.count })),
    scoring: benchmark.scoring,
    pricing: benchmark.pricing,
    environment: 'sandbox',
  };
}

export function requireBenchmark(id: string): BenchmarkDefinition {
  const benchmark = findBenchmark(id);
  if (!benchmark) throw notFound(`benchmark ${id}`);
  return benchmark;
}



export function alreadyFinished(kind: 'run' | 'training', row: { id: string; status: string; finished_at: Date | null }): SandboxApiError {
  const when = row.finished_at ? ` at ${row.finished_at.toISOString()}` : '';
  return new SandboxApiError(409, 'already_finished', `${kind} ${row.id} already ${row.status}${when}; there is nothing to cancel`);
}
