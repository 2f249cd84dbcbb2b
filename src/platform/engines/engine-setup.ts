// Which inference engine runs go to: the embedded llama.cpp server over MODELS_DIR, or any OpenAI-compatible INFERENCE_URL.
import os from 'node:os';
import type { EngineConfig } from '../../config.js';
import { renderPrompt, scoreAnswer } from '../benchmarks/index.js';
import type { RunItem } from '../sandbox/answers.js';
import { findBenchmark, questionAt } from '../sandbox/catalogue.js';
import type { SandboxLogger } from '../sandbox/context.js';
import { createOpenAiInference, type InferenceEngine, type PromptStyle } from './inference.js';
import { startLlamaServer } from './llama-server.js';

export interface InferenceEngineSetup {
  url?: string;
  apiKey?: string;
  promptStyle?: PromptStyle;
  modelsDir?: string;
  threads?: number;
  concurrency?: number;
  timeoutMs?: number;
  retries?: number;
  retryBaseDelayMs?: number;
}

/** The label of an endpoint we know only by its URL. */
export function endpointLabel(url: string): string {
  return `OpenAI-compatible endpoint ${new URL(url).host}`;
}

/**
 * Starts the engine runs go to: the endpoint at `url` when set (the embedded server is not
 * started then), else the embedded llama.cpp server over `modelsDir` on loopback, with
 * `threads` (default: the cores) and `concurrency` parallel sequences.
 */
export async function startInferenceEngine(
  setup: InferenceEngineSetup,
  logger: SandboxLogger,
): Promise<{ inference: InferenceEngine; /** The endpoint root (engineer T: adapters are loaded there). */ url: string; close(): Promise<void> }> {
  const client = {
    ...(setup.timeoutMs !== undefined ? { timeoutMs: setup.timeoutMs } : {}),
    ...(setup.retries !== undefined ? { retries: setup.retries } : {}),
    ...(setup.retryBaseDelayMs !== undefined ? { retryBaseDelayMs: setup.retryBaseDelayMs } : {}),
    connections: Math.max(4, (setup.concurrency ?? 4) * 2),
  };
  if (setup.url) {
    const inference = createOpenAiInference({
      baseUrl: setup.url,
      label: endpointLabel(setup.url),
      ...(setup.apiKey ? { apiKey: setup.apiKey } : {}),
      ...(setup.promptStyle ? { promptStyle: setup.promptStyle } : {}),
      ...client,
    });
    return { inference, url: setup.url, close: () => inference.close() };
  }
  if (!setup.modelsDir) throw new Error('a real inference engine needs either an endpoint URL or a models folder');
  const server = await startLlamaServer({
    modelsDir: setup.modelsDir,
    threads: setup.threads ?? Math.max(1, os.availableParallelism()),
    parallel: Math.max(1, setup.concurrency ?? 4),
    logger,
  });
  const inference = createOpenAiInference({ baseUrl: server.url, label: server.label, ...client });
  return {
    inference,
    url: server.url,
    async close() {
      await inference.close();
      await server.close();
    },
  };
}

/** A built-in exact-match benchmark's questions as run items (graded ones have no scorer a real run could use). */
export function catalogueItems(seed: number, id: string): RunItem[] | null {
  const benchmark = findBenchmark(id);
  if (!benchmark || benchmark.scoring !== 'exact_match' || benchmark.questionCount > 10_000) return null;
  const items: RunItem[] = [];
  for (let index = 0; index < benchmark.questionCount; index++) {
    const q = questionAt(seed, benchmark, index);
    items.push({ id: q.id, question: q.text, answer: q.expectedAnswer, category: q.category, scorer: 'exact' });
  }
  return items;
}

/** The prompt a run sends (variant 0) and the benchmark's scorer, from src/platform/benchmarks. */
export const defaultRenderPrompt = (item: RunItem): string => renderPrompt(item, 0);
export const defaultScoreAnswer = (item: RunItem, output: string): { extracted: string; score: number } => {
  const scored = scoreAnswer(item, output);
  return { extracted: scored.extracted, score: scored.score };
};

/** The sandbox's inference settings from configuration; undefined (simulated runs) when neither MODELS_DIR nor INFERENCE_URL is set. */
export function inferenceFromConfig(engines: EngineConfig): (InferenceEngineSetup & { creditsPer1kTokens: number }) | undefined {
  if (!engines.inferenceUrl && !engines.modelsDir) return undefined;
  return {
    ...(engines.inferenceUrl ? { url: engines.inferenceUrl } : {}),
    ...(engines.inferenceApiKey ? { apiKey: engines.inferenceApiKey } : {}),
    ...(engines.modelsDir ? { modelsDir: engines.modelsDir } : {}),
    promptStyle: engines.promptStyle,
    threads: engines.threads,
    concurrency: engines.concurrency,
    timeoutMs: engines.timeoutMs,
    creditsPer1kTokens: engines.runCreditsPer1kTokens,
  };
}
