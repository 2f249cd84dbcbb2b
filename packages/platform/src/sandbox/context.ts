// What every part of a running sandbox shares: the pool, the clock, settings, faults and the logger.
import type pg from 'pg';
import type { BenchmarkLibrary } from '../benchmarks/library.js';
import type { LoraHyperparameters, Trainer } from '../engines/trainer.js';
import type { InferenceEngine } from '../engines/inference.js';
import type { RunItem } from './answers.js';
import type { SandboxFaults } from './faults.js';
import type { ModelLineage, SimulationSettings } from './simulator.js';
import type { ModelRow } from './store/models.js';

/** Structured logger shape (pino's `Logger` fits). */
export interface SandboxLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const SILENT_LOGGER: SandboxLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export interface WebhookRetryPolicy {
  /** Wait after the first failed attempt; doubles per failure, with jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Failed attempts after which an event is given up (status `failed`). */
  maxAttempts: number;
  /** Per delivery attempt. */
  timeoutMs: number;
}

export const DEFAULT_WEBHOOK_RETRY: WebhookRetryPolicy = {
  baseDelayMs: 1_000,
  maxDelayMs: 60_000,
  maxAttempts: 8,
  timeoutMs: 5_000,
};

export interface SandboxContext {
  pool: pg.Pool;
  seed: number;
  timeScale: number;
  publicUrl: string;
  simulation: SimulationSettings;
  webhookRetry: WebhookRetryPolicy;
  logger: SandboxLogger;
  faults: SandboxFaults;
  /** Seeded stream for fault and failure decisions. */
  random: () => number;
  lineages: Map<string, ModelLineage>;
  /** Model rows read so far, by id (see `modelById`): a row never changes but by the engine sync, which empties this. */
  models: Map<string, ModelRow>;
  now(): Date;
  /** Real LoRA training of models served by a real engine; unset = such models cannot be trained here. */
  training?: TrainingEngine;
  /** Runs on a real inference engine; unset = runs are simulated. */
  inference?: InferenceContext;
  /** File benchmarks: BENCHMARKS_DIR and uploads. */
  benchmarks: BenchmarkLibrary;
}

/** What launching, pricing and executing runs on a real inference engine needs. */
export interface InferenceContext {
  engine: InferenceEngine;
  /** Price of a run's tokens (prompt + completion) per 1,000. */
  creditsPer1kTokens: number;
  /** A benchmark's questions for a run on the engine; null when there is no such benchmark. */
  benchmarkItems(id: string): Promise<RunItem[] | null>;
  /** The prompt a run sends for a question. */
  renderPrompt(item: RunItem): string;
  /** Wakes the run executor after a launch. */
  wake(): void;
  /** Tells this process's run executor a run was cancelled: its questions in flight are aborted, their answers discarded. */
  cancelled(runId: string): void;
}

/** What launching and pricing a real training needs. */
export interface TrainingEngine {
  trainer: Trainer;
  supervisor: TrainingSupervisor;
  /** Price per 1,000 trained tokens (dataset tokens x epochs); null = by the base model's size. */
  creditsPer1kTokens: number | null;
  /** Trained tokens per second this machine is expected to reach, for the estimate before launch. */
  tokensPerSecond: number;
  /** Hyperparameters of every launch over the trainer port's defaults (epochs come from the launch). */
  hyperparameters: Partial<LoraHyperparameters>;
  /** Absolute path of a base model's GGUF file, or null when this machine has none. */
  baseModelPath(modelId: string): string | null;
  /** Tokens of `text` in the model's tokenizer (an estimate when the engine cannot count). */
  countTokens(modelId: string, text: string): Promise<number>;
}

/** Runs the real trainings of a sandbox (training-supervisor.ts). */
export interface TrainingSupervisor {
  readonly trainerLabel: string;
  /** Claims and starts every unfinished real training no process is training; returns at once. */
  tick(): Promise<void>;
  /** Ids of the trainings this process is training now. */
  active(): string[];
  /**
   * A training was cancelled (its row says so): if this process trains it, its trainer job is
   * cancelled through the port now; returns at once. Other processes notice on their next tick.
   */
  cancel(id: string): void;
  /** Resolves when every training this process started has settled (completed, failed or handed back). */
  idle(): Promise<void>;
  /** Cancels this process's trainer jobs and releases their locks; the trainings stay running for a rerun. */
  stop(): Promise<void>;
}
