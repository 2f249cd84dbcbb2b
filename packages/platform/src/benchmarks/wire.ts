// A file benchmark as the platform API shows it (the contract's Benchmark shape).
import type { BenchmarkWire } from '@verdict/contract/contract';
import { estimateRunCredits } from '../engines/run-pricing.js';
import type { FileBenchmark } from './directory.js';
import { describeFormat } from './formats.js';
import { renderPrompt } from './prompts.js';

/** Category of a question that has none (as runs store it). */
const NO_CATEGORY = 'all';

/**
 * The benchmark's wire shape: every scorer gives 0 or 1, so scoring is `exact_match`; the price is
 * the flat quote a run on a real engine is charged at most (its prompts and generation budgets).
 */
export function fileBenchmarkToWire(benchmark: FileBenchmark, creditsPer1kTokens: number): BenchmarkWire {
  const counts = new Map<string, number>();
  for (const item of benchmark.items) counts.set(item.category ?? NO_CATEGORY, (counts.get(item.category ?? NO_CATEGORY) ?? 0) + 1);
  const from = benchmark.source === 'directory' ? `${benchmark.fileName} in BENCHMARKS_DIR` : `the uploaded file ${benchmark.fileName}`;
  return {
    id: benchmark.id,
    name: benchmark.id,
    description: `${benchmark.items.length} question${benchmark.items.length === 1 ? '' : 's'} from ${from}, ${describeFormat(benchmark.format)}`,
    question_count: benchmark.items.length,
    categories: [...counts].map(([name, count]) => ({ name, question_count: count })),
    scoring: 'exact_match',
    pricing: {
      type: 'flat',
      credits: estimateRunCredits(
        benchmark.items.map((item) => ({ item, prompt: renderPrompt(item) })),
        creditsPer1kTokens,
      ),
    },
    environment: 'sandbox',
    source_format: benchmark.format,
  };
}
