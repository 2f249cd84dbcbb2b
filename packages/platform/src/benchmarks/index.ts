// Benchmarks as files: the JSONL format, scorers, prompts, BENCHMARKS_DIR and uploaded benchmarks.
export {
  BENCHMARK_ID_PATTERN,
  BENCHMARK_LIMITS,
  SCORERS,
  choiceLetter,
  formatBenchmarkErrors,
  parseBenchmarkJsonl,
  scorerOf,
  parseNumber,
  type BenchmarkDefaults,
  type BenchmarkFileError,
  type BenchmarkItem,
  type ParseBenchmarkResult,
  type Scorer,
} from './format.js';
export { acceptedAnswers, cutAtStop, exactMatch, normalizeText, scoreAnswer, type ScoredAnswer } from './scorers.js';
export { describeFormat, detectFormat, formatReport, FORMAT_NAMES, type BenchmarkFormatId, type BenchmarkFormatReport } from './formats.js';
export { PROMPT_VARIANTS, renderPrompt } from './prompts.js';
export { MAX_BENCHMARK_FILE_BYTES, loadBenchmarksDir, readBenchmarkFile, type BenchmarksDir, type FileBenchmark, type InvalidBenchmarkFile } from './directory.js';
export { BENCHMARK_UPLOADS_DDL, createBenchmarkLibrary, type BenchmarkLibrary, type BenchmarkLibraryOptions, type UploadOutcome } from './library.js';
export { fileBenchmarkToWire } from './wire.js';
