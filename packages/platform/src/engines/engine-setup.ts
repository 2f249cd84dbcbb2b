// Which inference engine runs go to: the embedded llama.cpp server over MODELS_DIR, or any OpenAI-compatible INFERENCE_URL.
import os from 'node:os';
import type { EngineConfig } from '../config.js';
import { renderPrompt, scoreAnswer } from '../benchmarks/index.js';
import type { RunItem } from '../sandbox/answers.js';
import { findBenchmark, questionAt } from '../sandbox/catalogue.js';
import type { SandboxLogger } from '../sandbox/context.js';
import type pg from 'pg';
import { createOpenAiInference, type InferenceEngine, type PromptStyle } from './inference.js';
import { createAdapterServing, type AdapterServing, type InferenceServerSetting } from './lora-adapters.js';
import type { AdapterRegistration } from './lora-adapters.js';

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
  /** Which server `url` is (`INFERENCE_SERVER`); default auto. */
  server?: InferenceServerSetting;
  /** The adapters folder as the server at `url` sees it (`INFERENCE_ADAPTERS_DIR`); unset = the platform's own path. */
  serverAdaptersDir?: string;
}

/** The label of an endpoint we know only by its URL (and the server kind when configured). */
export function endpointLabel(url: string, server: InferenceServerSetting = 'auto'): string {
  const host = new URL(url).host;
  if (server === 'vllm') return `vLLM at ${host}`;
  if (server === 'sglang') return `SGLang at ${host}`;
  return `OpenAI-compatible endpoint ${host}`;
}

/** A trained model's adapter, by the name runs ask for, from the platform's models (null: not a trained adapter). */
export function adapterLookup(pool: pg.Pool): (name: string) => Promise<AdapterRegistration | null> {
  return async (name) => {
    const result = await pool.query<{ id: string; adapter_path: string; base_model_id: string }>(
      `SELECT id, adapter_path, base_model_id FROM sandbox.models
        WHERE id = $1 AND kind = 'fine_tuned' AND adapter_path IS NOT NULL`,
      [name],
    );
    const row = result.rows[0];
    return row ? { name: row.id, path: row.adapter_path, baseModelId: row.base_model_id } : null;
  };
}

/**
 * Starts the engine runs go to: the endpoint at `url` when set (the embedded server is not
 * started then), else the embedded llama.cpp server over `modelsDir` on loopback, with
 * `threads` (default: the cores) and `concurrency` parallel sequences.
 */
export async function startInferenceEngine(
  setup: InferenceEngineSetup,
  logger: SandboxLogger,
  extras: { lookupAdapter?: (name: string) => Promise<AdapterRegistration | null> } = {},
): Promise<{
  /** Runs go here; requests on a trained model name its adapter the server's way. */
  inference: InferenceEngine;
  /** The endpoint root. */
  url: string;
  /** Loads produced adapters on the endpoint. */
  adapters: AdapterServing;
  close(): Promise<void>;
}> {
  const client = {
    ...(setup.timeoutMs !== undefined ? { timeoutMs: setup.timeoutMs } : {}),
    ...(setup.retries !== undefined ? { retries: setup.retries } : {}),
    ...(setup.retryBaseDelayMs !== undefined ? { retryBaseDelayMs: setup.retryBaseDelayMs } : {}),
    connections: Math.max(4, (setup.concurrency ?? 4) * 2),
  };
  const lookup = extras.lookupAdapter ? { lookup: extras.lookupAdapter } : {};
  if (setup.url) {
    const inference = createOpenAiInference({
      baseUrl: setup.url,
      label: endpointLabel(setup.url, setup.server),
      ...(setup.apiKey ? { apiKey: setup.apiKey } : {}),
      ...(setup.promptStyle ? { promptStyle: setup.promptStyle } : {}),
      ...client,
    });
    const adapters = createAdapterServing({
      baseUrl: setup.url,
      ...(setup.apiKey ? { apiKey: setup.apiKey } : {}),
      server: setup.server ?? 'auto',
      ...(setup.serverAdaptersDir ? { serverAdaptersDir: setup.serverAdaptersDir } : {}),
      ...lookup,
    });
    return { inference: adapters.wrap(inference), url: setup.url, adapters, close: () => inference.close() };
  }
  if (!setup.modelsDir) throw new Error('a real inference engine needs either an endpoint URL or a models folder');
  // Imported here: node-llama-cpp loads only in a worker that serves models itself.
  const { startLlamaServer } = await import('./llama-server.js');
  const server = await startLlamaServer({
    modelsDir: setup.modelsDir,
    threads: setup.threads ?? Math.max(1, os.availableParallelism()),
    parallel: Math.max(1, setup.concurrency ?? 4),
    logger,
  });
  const inference = createOpenAiInference({ baseUrl: server.url, label: server.label, ...client });
  // The embedded server speaks vLLM's adapter route and takes the base model with it.
  const adapters = createAdapterServing({ baseUrl: server.url, server: 'openai', sendBaseModel: true, ...lookup });
  return {
    inference: adapters.wrap(inference),
    url: server.url,
    adapters,
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

/** The prompt a run sends (variant 0) and the benchmark's scorer, from benchmarks/. */
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
    server: engines.inferenceServer,
    ...(engines.inferenceAdaptersDir ? { serverAdaptersDir: engines.inferenceAdaptersDir } : {}),
    promptStyle: engines.promptStyle,
    threads: engines.threads,
    concurrency: engines.concurrency,
    timeoutMs: engines.timeoutMs,
    creditsPer1kTokens: engines.runCreditsPer1kTokens,
  };
}
