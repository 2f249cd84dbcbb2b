// The one interface the agent's tools use to reach the benchmarking and training platform.
import type {
  Balance,
  Benchmark,
  Dataset,
  Model,
  QuestionResult,
  Run,
  TrainingEstimate,
  TrainingJob,
} from './contract.js';

export { isFinishedStatus } from './contract.js';
export type {
  Balance,
  Benchmark,
  BenchmarkPricing,
  Dataset,
  Environment,
  FinishedStatus,
  Model,
  ModelKind,
  QuestionResult,
  Run,
  RunStatus,
  Scoring,
  TrainingEstimate,
  TrainingJob,
  TrainingStatus,
  WebhookEvent,
  WebhookEventType,
} from './contract.js';

/**
 * Every method throws `PlatformError` (errors.ts) on failure. Launches take an
 * idempotency key: calling again with the same key and input returns the original resource and
 * charges nothing more; the same key with a different input fails with `invalid_request`.
 */
export interface Platform {
  /** Models whose id or name contains `query`, case-insensitive; exact matches first. */
  findModels(query: string): Promise<Model[]>;
  getModel(id: string): Promise<Model>;
  listBenchmarks(): Promise<Benchmark[]>;
  getBenchmark(id: string): Promise<Benchmark>;
  /**
   * Stores a benchmark file (JSONL, one question a line) under `id`. Uploading the same file again
   * returns the same benchmark; a bad file fails with `invalid_request` naming each bad line and field.
   */
  uploadBenchmark(input: { id: string; fileName?: string; content: string }): Promise<Benchmark>;
  launchRun(input: { benchmarkId: string; modelId: string }, idempotencyKey: string): Promise<Run>;
  getRun(id: string): Promise<Run>;
  /**
   * Cancels a queued or running run: it ends `cancelled`, charged only for what was done (never
   * more than its price), and the platform sends `run.cancelled`. Idempotent: cancelling a
   * cancelled run returns it again. A run that already completed or failed fails with
   * `already_finished` (409), changing nothing; an unknown id with `not_found`.
   */
  cancelRun(id: string): Promise<Run>;
  /** One page of a completed run's per-question results; pass `nextCursor` back until it is null. */
  listRunResults(
    runId: string,
    page?: { cursor?: string; limit?: number },
  ): Promise<{ items: QuestionResult[]; nextCursor: string | null }>;
  buildDataset(
    input: { runId: string; augmentation?: number; heldOutFraction?: number; seed?: number },
    idempotencyKey: string,
  ): Promise<Dataset>;
  getDataset(id: string): Promise<Dataset>;
  estimateTraining(input: { datasetId: string; baseModelId: string; epochs?: number }): Promise<TrainingEstimate>;
  launchTraining(
    input: { datasetId: string; baseModelId: string; epochs?: number },
    idempotencyKey: string,
  ): Promise<TrainingJob>;
  getTraining(id: string): Promise<TrainingJob>;
  /** Cancels a queued or running training, as {@link Platform.cancelRun} does a run; sends `training.cancelled`. */
  cancelTraining(id: string): Promise<TrainingJob>;
  getBalance(): Promise<Balance>;
  /** Sets the URL the platform POSTs webhooks to (replaces any previous one). */
  registerWebhook(url: string): Promise<void>;
}
