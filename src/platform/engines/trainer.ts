// The trainer port: a LoRA job spec in; progress, metrics and an adapter file out.
// The platform supervises a training through this port; engines (the bundled PyTorch trainer, the
// simulator, later hosted ones) implement it.

/**
 * One supervised example, as text. The prompt is rendered exactly as a run sends it to the
 * inference engine; an engine tokenizes with the base model's own tokenizer, loss on the completion.
 */
export interface TrainingExample {
  prompt: string;
  completion: string;
}

export interface LoraHyperparameters {
  rank: number;
  alpha: number;
  /** GGUF tensor names inside a block, e.g. `attn_q`, `attn_v`, `attn_output`, `ffn_down`. */
  targetModules: string[];
  epochs: number;
  learningRate: number;
}

export const DEFAULT_LORA_HYPERPARAMETERS: LoraHyperparameters = {
  rank: 4,
  alpha: 8,
  targetModules: ['attn_q', 'attn_v', 'attn_output', 'ffn_down'],
  epochs: 3,
  learningRate: 3e-3,
};

export interface TrainingSpec {
  /** The platform's training id; also the trainer's submission id (one launch, one job). */
  jobId: string;
  /** Absolute path of the base model's GGUF file. */
  baseModelPath: string;
  /** Absolute path of a JSONL file, one `TrainingExample` (`{"prompt": ..., "completion": ...}`) a line. */
  datasetPath: string;
  /** Absolute path the GGUF LoRA adapter is written to (atomically: temp file, then rename). */
  adapterPath: string;
  /** A folder the trainer may use for its own files (logs, checkpoints). */
  workDir: string;
  hyperparameters: LoraHyperparameters;
  /** CPU threads the trainer may use. */
  threads: number;
}

export type TrainerEvent =
  | { type: 'progress'; step: number; totalSteps: number; epoch: number; loss: number }
  | { type: 'completed'; adapterPath: string; metrics: { finalLoss: number; steps: number; seconds: number } }
  | { type: 'failed'; message: string };

export interface TrainerJob {
  /** Resolves with the job's last event (`completed` or `failed`). */
  done: Promise<Extract<TrainerEvent, { type: 'completed' | 'failed' }>>;
  /** Stops the job; `done` then resolves with `failed`. */
  cancel(): Promise<void>;
}

export interface Trainer {
  /** Named in every message about work it did, e.g. "PyTorch LoRA, CPU, 2 threads". */
  readonly label: string;
  /** Whether this machine can train, and if not, why in the user's words (e.g. torch missing). */
  availability(): Promise<{ ok: true } | { ok: false; reason: string }>;
  /** Starts a job; `onEvent` receives progress lines as they come. */
  start(spec: TrainingSpec, onEvent: (event: TrainerEvent) => void): Promise<TrainerJob>;
}
