// The trainer port: a LoRA job spec in; progress, metrics and an adapter file out.
// The platform supervises a training through this port; engines (the bundled PyTorch trainer, the
// simulator, later hosted ones) implement it.
import type { PromptStyle } from './inference.js';

/**
 * One supervised example, as text. The prompt is what a run sends to the inference engine; an
 * engine renders it as the run was asked (`style`) and tokenizes with the base model's own
 * tokenizer, loss on the completion.
 */
export interface TrainingExample {
  /** The question: the whole prompt of a completion request, or the user turn of a chat request. */
  prompt: string;
  /** The expected answer: the text that continues the prompt, or the assistant's turn (whose end the engine adds). */
  completion: string;
  /**
   * How the run asked it: `chat` (`/v1/chat/completions`, rendered through the model's chat
   * template) or `completion` (the prompt as is). Unset: as the embedded engine asks, chat when the
   * base model's GGUF has a chat template.
   */
  style?: PromptStyle;
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

/** Where a trainer uses the GPU: `auto` = CUDA when torch finds it, else the CPU (`TRAINER_DEVICE`). */
export type TrainerDevice = 'auto' | 'cpu' | 'cuda';

/**
 * The adapter's Hugging Face PEFT folder (`adapter_config.json` + `adapter_model.safetensors`, what
 * vLLM and SGLang load), written beside its GGUF file: `adapters/<training id>.gguf` ->
 * `adapters/<training id>.peft/`.
 */
export function peftAdapterDir(ggufAdapterPath: string): string {
  return ggufAdapterPath.replace(/\.gguf$/i, '') + '.peft';
}

export interface TrainingSpec {
  /** The platform's training id; also the trainer's submission id (one launch, one job). */
  jobId: string;
  /** Absolute path of the base model's GGUF file. */
  baseModelPath: string;
  /** Absolute path of a JSONL file, one `TrainingExample` (`{"prompt": ..., "completion": ...}`) a line. */
  datasetPath: string;
  /**
   * Absolute path the GGUF LoRA adapter is written to (atomically: temp file, then rename). The
   * bundled trainer writes the same adapter as a PEFT folder at {@link peftAdapterDir} first.
   */
  adapterPath: string;
  /** A folder the trainer may use for its own files (logs, checkpoints). */
  workDir: string;
  hyperparameters: LoraHyperparameters;
  /** CPU threads the trainer may use. */
  threads: number;
  /** The base model's id on the inference endpoint (a hosted trainer's model name). */
  baseModelId?: string;
}

export type TrainerEvent =
  | { type: 'progress'; step: number; totalSteps: number; epoch: number; loss: number }
  | {
      type: 'completed';
      /** The adapter file written; empty when the produced model is served remotely (`servedModel`). */
      adapterPath: string;
      metrics: { finalLoss: number; steps: number; seconds: number };
      /** The name the inference endpoint serves the produced model under (a hosted trainer's output model); runs ask for it. */
      servedModel?: string;
    }
  | { type: 'failed'; message: string };

export interface TrainerJob {
  /** Resolves with the job's last event (`completed` or `failed`). */
  done: Promise<Extract<TrainerEvent, { type: 'completed' | 'failed' }>>;
  /**
   * Stops the job; `done` then resolves with `failed`. Resolves once the engine took the stop;
   * rejects when it could not be asked (the platform then stops it through {@link Trainer.stopOrphan}).
   */
  cancel(): Promise<void>;
  /**
   * Stops following a remote job without stopping it (a platform shutting down; the next start
   * reattaches); `done` then resolves with `failed`. Unset = {@link cancel}.
   */
  detach?(): Promise<void>;
  /** The job's id at a remote engine (a Together fine-tune id, a Ray submission id), for logs. */
  readonly remoteId?: string;
}

/**
 * What became of the remote job of a training that no platform process follows, asked to stop it:
 * `stopped` (the engine took the stop), `not_found` (the engine has no job for it),
 * `already_finished` (it had ended, or a stop was already under way). `remoteId` names the job at
 * the engine when one was found.
 */
export interface OrphanStop {
  outcome: 'stopped' | 'not_found' | 'already_finished';
  remoteId: string | null;
  /** The engine's status of the job when it was found. */
  status?: string;
}

/** An engine's own price for a training, asked before launch. */
export interface TrainingQuote {
  /** In platform credits. */
  priceCredits: number;
  /** Tokens the engine expects to train on (dataset tokens x epochs), when it says. */
  trainedTokens?: number;
}

/** What a trainer's price estimate is asked with: the examples, the base model's id and the launch's hyperparameters. */
export interface TrainingQuoteRequest {
  examples: TrainingExample[];
  baseModelId: string;
  hyperparameters: LoraHyperparameters;
}

/** Why a trainer cannot train now; `unreachable`: its cluster does not answer (a launch is refused with a 503, to retry later). */
export interface TrainerUnavailable {
  ok: false;
  reason: string;
  /** The reason is complete as it is (no install hint to add): a setting to change (TRAINER_DEVICE, RAY_AUTH_TOKEN) or a cluster, not a missing PyTorch. */
  kind?: 'unreachable' | 'settings';
}

export interface Trainer {
  /** Named in every message about work it did, e.g. "PyTorch LoRA, CPU, 2 threads". */
  readonly label: string;
  /** Whether this machine can train, and if not, why in the user's words (e.g. torch missing). */
  availability(): Promise<{ ok: true } | TrainerUnavailable>;
  /** Starts a job; `onEvent` receives progress lines as they come. */
  start(spec: TrainingSpec, onEvent: (event: TrainerEvent) => void): Promise<TrainerJob>;
  /**
   * Optional (hosted engines): the engine's own price, which the platform's training estimate
   * returns and the launch charges instead of the per-token rate. Throws in the user's words.
   */
  estimate?(request: TrainingQuoteRequest): Promise<TrainingQuote>;
  /**
   * Optional (remote engines, whose jobs outlive the platform process): finds the job `start` would
   * have launched or reattached for this spec, without launching anything, and stops it unless it
   * has ended. Throws when the engine cannot answer now (to retry later) or refuses.
   */
  stopOrphan?(spec: TrainingSpec): Promise<OrphanStop>;
  /** False when the trainer works from the base model's id, not its GGUF file on this machine. Default true. */
  readonly needsBaseModelFile?: boolean;
  /**
   * Optional: why this trainer cannot train the base model file at `baseModelPath` (an architecture
   * or tensor type it does not handle), in the user's words, or null when it can. Asked before a
   * training is priced or charged.
   */
  checkBaseModel?(baseModelPath: string): Promise<string | null>;
}
