// The platform's engine variables: where runs go, which trainer trains, how both are paced and priced.
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import {
  ConfigError,
  isFolder,
  jsonNumbers,
  jsonStrings,
  optionalString,
  positiveInt,
  positiveNumber,
  problemsOf,
  url,
  type ConfigProblem,
} from '@verdict/contract/env';
import { DEFAULT_TOGETHER_API_URL } from './engines/together-trainer.js';

/** The Ray variables: trainings as Ray jobs submitted through the Jobs REST API. */
const RAY_ENV = {
  RAY_ADDRESS: optionalString.refine((v) => v === undefined || (URL.canParse(v) && /^https?:$/.test(new URL(v).protocol)), {
    message: "must be the HTTP address of the Ray cluster's dashboard (its Jobs API), e.g. http://ray-head:8265",
  }),
  RAY_SHARED_DIR: optionalString.refine((v) => v === undefined || isFolder(v), {
    message: "must be an existing folder on storage the Ray cluster's nodes also mount",
  }),
  RAY_CLUSTER_SHARED_DIR: optionalString.refine((v) => v === undefined || path.isAbsolute(v), {
    message: "must be an absolute path: where the Ray cluster's nodes mount RAY_SHARED_DIR",
  }),
  RAY_AUTH_TOKEN: optionalString,
  RAY_JOB_HEADERS: jsonStrings('{"Authorization": "Bearer <token>"}'),
  RAY_NUM_GPUS: positiveNumber(1),
  RAY_NUM_CPUS: positiveNumber(1).refine((v) => v > 0, { message: 'must be above 0' }),
  RAY_ENTRYPOINT_RESOURCES: jsonNumbers('{"accelerator_type:A100": 1}'),
  RAY_PYTHON: optionalString.transform((v) => v ?? 'python3'),
  RAY_POLL_MS: positiveInt(2_000).refine((v) => v >= 1, { message: 'must be at least 1' }),
  RAY_MAX_POLL_MS: positiveInt(30_000).refine((v) => v >= 1, { message: 'must be at least 1' }),
};

/** What the Ray variables need of each other and of the rest: one problem per variable. */
function rayProblems(env: {
  RAY_ADDRESS?: string | undefined;
  RAY_SHARED_DIR?: string | undefined;
  RAY_CLUSTER_SHARED_DIR?: string | undefined;
  RAY_AUTH_TOKEN?: string | undefined;
  RAY_JOB_HEADERS?: Record<string, string> | undefined;
  MODELS_DIR?: string | undefined;
  TOGETHER_API_KEY?: string | undefined;
}): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (!env.RAY_ADDRESS) {
    for (const variable of ['RAY_SHARED_DIR', 'RAY_CLUSTER_SHARED_DIR', 'RAY_AUTH_TOKEN', 'RAY_JOB_HEADERS'] as const) {
      if (env[variable] !== undefined) problems.push({ variable, detail: 'is set but RAY_ADDRESS is not: set the Ray cluster it is for' });
    }
    return problems;
  }
  if (!env.RAY_SHARED_DIR) {
    problems.push({
      variable: 'RAY_SHARED_DIR',
      detail:
        "is required with RAY_ADDRESS: a folder on storage the Ray cluster's nodes also mount (NFS, a mounted bucket), where the platform puts each job's dataset, base model and trainer and the job writes the adapter",
    });
  }
  if (!env.MODELS_DIR) {
    problems.push({
      variable: 'MODELS_DIR',
      detail: 'is required with RAY_ADDRESS: the GGUF files of the base models the Ray jobs train (and where their adapters go)',
    });
  }
  if (env.TOGETHER_API_KEY) {
    problems.push({ variable: 'RAY_ADDRESS', detail: 'and TOGETHER_API_KEY both choose the trainer: set one of them' });
  }
  return problems;
}

/** `https://host/v1/` and `https://host` name the same endpoint. */
function endpointRoot(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/**
 * Together trains only what Together serves: a fine-tune lives on Together, so a setup that trains
 * there must also run there. With MODELS_DIR (llama.cpp here) or an INFERENCE_URL of the user's own,
 * the trained model could be launched but never answered; refused at start-up instead.
 */
function togetherProblems(env: {
  TOGETHER_API_KEY?: string | undefined;
  TOGETHER_API_URL?: string | undefined;
  MODELS_DIR?: string | undefined;
  INFERENCE_URL?: string | undefined;
  RAY_ADDRESS?: string | undefined;
}): ConfigProblem[] {
  if (!env.TOGETHER_API_KEY || env.RAY_ADDRESS) return [];
  const fix =
    "a model Together fine-tunes is served only by Together's inference, so runs must go there too: unset it to run on Together, or unset TOGETHER_API_KEY to train with the bundled trainer";
  const problems: ConfigProblem[] = [];
  if (env.MODELS_DIR) {
    problems.push({ variable: 'MODELS_DIR', detail: `runs models on this machine, but TOGETHER_API_KEY trains on Together; ${fix}` });
  }
  const together = env.TOGETHER_API_URL ?? DEFAULT_TOGETHER_API_URL;
  if (env.INFERENCE_URL && endpointRoot(env.INFERENCE_URL) !== endpointRoot(together)) {
    problems.push({
      variable: 'INFERENCE_URL',
      detail: `sends runs to ${env.INFERENCE_URL}, but TOGETHER_API_KEY trains on Together; ${fix}`,
    });
  }
  return problems;
}

/** The engine variables: where runs go and how they are paced and priced. */
export const ENGINE_ENV = {
    MODELS_DIR: optionalString.refine((v) => v === undefined || isFolder(v), {
      message: 'must be an existing folder of GGUF model files',
    }),
    BENCHMARKS_DIR: optionalString.refine((v) => v === undefined || isFolder(v), {
      message: 'must be an existing folder of benchmark files (<id>.jsonl)',
    }),
    INFERENCE_URL: url('an OpenAI-compatible endpoint root, e.g. http://127.0.0.1:8000/v1'),
    INFERENCE_API_KEY: optionalString,
    INFERENCE_PROMPT_STYLE: optionalString
      .refine((v) => v === undefined || v === 'chat' || v === 'completion', {
        message: 'must be chat or completion (how to ask a model the endpoint does not say has a chat template)',
      })
      .transform((v) => (v ?? 'chat') as 'chat' | 'completion'),
    INFERENCE_SERVER: optionalString
      .refine((v) => v === undefined || ['auto', 'vllm', 'sglang', 'openai'].includes(v), {
        message: 'must be auto, vllm, sglang or openai (which server INFERENCE_URL is, for loading trained adapters)',
      })
      .transform((v) => (v ?? 'auto') as 'auto' | 'vllm' | 'sglang' | 'openai'),
    INFERENCE_ADAPTERS_DIR: optionalString.refine((v) => v === undefined || path.isAbsolute(v), {
      message: 'must be an absolute path: the adapters folder as the inference server sees it',
    }),
    ENGINE_THREADS: positiveInt(os.availableParallelism()).refine((v) => v >= 1, { message: 'must be at least 1' }),
    INFERENCE_CONCURRENCY: positiveInt(4).refine((v) => v >= 1, { message: 'must be at least 1' }),
    INFERENCE_TIMEOUT_MS: positiveInt(120_000).refine((v) => v >= 1, { message: 'must be at least 1' }),
    RUN_CREDITS_PER_1K_TOKENS: positiveNumber(0.1),
    TRAINER_PYTHON: optionalString,
    TRAINER_DEVICE: optionalString
      .refine((v) => v === undefined || ['auto', 'cpu', 'cuda'].includes(v), {
        message: 'must be auto, cpu or cuda (where the bundled trainer computes; auto = cuda when torch finds a GPU)',
      })
      .transform((v) => (v ?? 'auto') as 'auto' | 'cpu' | 'cuda'),
    TRAINING_CREDITS_PER_1K_TOKENS: positiveNumber(1),
    TRAINING_TOKENS_PER_SECOND: positiveNumber(500),
    TRAINING_LEARNING_RATE: optionalString
      .transform((value) => (value === undefined ? undefined : Number(value)))
      .refine((value) => value === undefined || (Number.isFinite(value) && value > 0 && value <= 1), {
        message: 'must be a number above 0 and at most 1, e.g. 0.003',
      }),
    TOGETHER_API_KEY: optionalString,
    TOGETHER_API_URL: url("Together's API base, e.g. https://api.together.xyz/v1"),
    TOGETHER_POLL_MS: positiveInt(5_000).refine((v) => v >= 1, { message: 'must be at least 1' }),
    TOGETHER_MAX_POLL_MS: positiveInt(60_000).refine((v) => v >= 1, { message: 'must be at least 1' }),
    ...RAY_ENV,
    TOGETHER_MODEL_MAP: optionalString
      .transform((v, ctx) => {
        if (v === undefined) return {};
        try {
          const map = JSON.parse(v) as unknown;
          if (map && typeof map === 'object' && !Array.isArray(map) && Object.values(map).every((name) => typeof name === 'string' && name !== '')) {
            return map as Record<string, string>;
          }
        } catch {
          // reported below
        }
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object from our model ids to Together model names, e.g. {"stories260K":"togethercomputer/Tiny-Stories-Instruct"}' });
        return z.NEVER;
      }),
};

/** What the engine variables need of each other: one problem per variable. */
export function engineProblems(env: z.output<z.ZodObject<typeof ENGINE_ENV>>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (env.INFERENCE_API_KEY && !env.INFERENCE_URL) {
    problems.push({ variable: 'INFERENCE_API_KEY', detail: 'is set but INFERENCE_URL is not: set the endpoint it is for' });
  }
  return [...problems, ...rayProblems(env), ...togetherProblems(env)];
}

/** Reads only the engine variables (for `npm run sandbox`); throws {@link ConfigError} listing every problem. */
export function loadEngineConfig(env: NodeJS.ProcessEnv = process.env): EngineConfig {
  const parsed = z.object(ENGINE_ENV).safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(problemsOf(parsed.error.issues));
  }
  const problems = engineProblems(parsed.data);
  if (problems.length > 0) throw new ConfigError(problems);
  return engineConfig(parsed.data);
}

export function engineConfig(e: z.output<z.ZodObject<typeof ENGINE_ENV>>): EngineConfig {
  return {
    modelsDir: e.MODELS_DIR === undefined ? undefined : path.resolve(e.MODELS_DIR),
    benchmarksDir: e.BENCHMARKS_DIR === undefined ? undefined : path.resolve(e.BENCHMARKS_DIR),
    // With Together and no endpoint of the user's own, runs go to Together's inference too.
    inferenceUrl: e.INFERENCE_URL ?? (e.TOGETHER_API_KEY && !e.MODELS_DIR ? (e.TOGETHER_API_URL ?? DEFAULT_TOGETHER_API_URL) : undefined),
    inferenceApiKey:
      e.INFERENCE_API_KEY ??
      (e.TOGETHER_API_KEY && !e.MODELS_DIR && (!e.INFERENCE_URL || endpointRoot(e.INFERENCE_URL) === endpointRoot(e.TOGETHER_API_URL ?? DEFAULT_TOGETHER_API_URL))
        ? e.TOGETHER_API_KEY
        : undefined),
    promptStyle: e.INFERENCE_PROMPT_STYLE,
    inferenceServer: e.INFERENCE_SERVER,
    inferenceAdaptersDir: e.INFERENCE_ADAPTERS_DIR,
    threads: e.ENGINE_THREADS,
    concurrency: e.INFERENCE_CONCURRENCY,
    timeoutMs: e.INFERENCE_TIMEOUT_MS,
    runCreditsPer1kTokens: e.RUN_CREDITS_PER_1K_TOKENS,
    trainerPython: e.TRAINER_PYTHON,
    trainerDevice: e.TRAINER_DEVICE,
    trainingCreditsPer1kTokens: e.TRAINING_CREDITS_PER_1K_TOKENS,
    trainingTokensPerSecond: e.TRAINING_TOKENS_PER_SECOND,
    trainingLearningRate: e.TRAINING_LEARNING_RATE,
    togetherApiKey: e.TOGETHER_API_KEY,
    togetherApiUrl: e.TOGETHER_API_URL ?? DEFAULT_TOGETHER_API_URL,
    togetherPollMs: e.TOGETHER_POLL_MS,
    togetherMaxPollMs: Math.max(e.TOGETHER_POLL_MS, e.TOGETHER_MAX_POLL_MS),
    ray: e.RAY_ADDRESS
      ? {
          address: e.RAY_ADDRESS,
          sharedDir: path.resolve(e.RAY_SHARED_DIR!),
          clusterSharedDir: e.RAY_CLUSTER_SHARED_DIR ?? path.resolve(e.RAY_SHARED_DIR!),
          headers: { ...(e.RAY_AUTH_TOKEN ? { Authorization: `Bearer ${e.RAY_AUTH_TOKEN}` } : {}), ...e.RAY_JOB_HEADERS },
          numGpus: e.RAY_NUM_GPUS,
          numCpus: e.RAY_NUM_CPUS,
          resources: e.RAY_ENTRYPOINT_RESOURCES,
          python: e.RAY_PYTHON,
          pollMs: e.RAY_POLL_MS,
          maxPollMs: Math.max(e.RAY_POLL_MS, e.RAY_MAX_POLL_MS),
        }
      : undefined,
    togetherModelMap: e.TOGETHER_MODEL_MAP,
  };
}

export interface EngineConfig {
  modelsDir: string | undefined;
  /** Benchmark files `<id>.jsonl`, served beside the built-in catalogue and uploads. */
  benchmarksDir: string | undefined;
  inferenceUrl: string | undefined;
  inferenceApiKey: string | undefined;
  promptStyle: 'chat' | 'completion';
  /** Which server INFERENCE_URL is, for loading trained adapters; auto = from `GET /v1/models`. */
  inferenceServer: 'auto' | 'vllm' | 'sglang' | 'openai';
  /** The adapters folder as the inference server sees it; unset = the platform's own path. */
  inferenceAdaptersDir: string | undefined;
  threads: number;
  concurrency: number;
  timeoutMs: number;
  runCreditsPer1kTokens: number;
  /** A python with torch for the bundled trainer; unset = `python3`, then `/usr/bin/python3`. */
  trainerPython: string | undefined;
  /** `TRAINER_DEVICE`: where the bundled trainer computes (here and as Ray jobs). */
  trainerDevice: 'auto' | 'cpu' | 'cuda';
  /** Price of a real training per 1,000 trained tokens (dataset tokens x epochs). */
  trainingCreditsPer1kTokens: number;
  /** Expected training speed in trained tokens a second, for the estimate before launch. */
  trainingTokensPerSecond: number;
  /** LoRA learning rate of every training; unset = the trainer's default (3e-3). */
  trainingLearningRate: number | undefined;
  /** Set = trainings are Together fine-tuning jobs. */
  togetherApiKey: string | undefined;
  /** Together's API base (`/v1` included). */
  togetherApiUrl: string;
  /** First and longest interval between two status polls of a Together job (backoff doubles while nothing changes). */
  togetherPollMs: number;
  togetherMaxPollMs: number;
  /** Our model ids to Together's model names, for trainings of a model served elsewhere. */
  togetherModelMap: Record<string, string>;
  /** Set (`RAY_ADDRESS`) = trainings are the bundled trainer as Ray jobs on that cluster. */
  ray: RayConfig | undefined;
}

/** The Ray cluster trainings are submitted to, and the storage it shares with this platform. */
export interface RayConfig {
  /** The dashboard's HTTP address (Jobs API base), e.g. `http://ray-head:8265`. */
  address: string;
  /** Shared storage as this machine mounts it: job inputs go here, adapters come back here. */
  sharedDir: string;
  /** The same storage as the cluster's nodes mount it (default: the same path). */
  clusterSharedDir: string;
  /** Sent with every Jobs API call (`RAY_AUTH_TOKEN` as `Authorization: Bearer`, then `RAY_JOB_HEADERS`). */
  headers: Record<string, string>;
  /** GPUs a training job reserves (`entrypoint_num_gpus`); 0 = none. */
  numGpus: number;
  /** CPUs a training job reserves (`entrypoint_num_cpus`), also the trainer's threads. */
  numCpus: number;
  /** Custom resources a training job reserves (`entrypoint_resources`). */
  resources: Record<string, number> | undefined;
  /** The python on the cluster's nodes that has torch and numpy. */
  python: string;
  pollMs: number;
  maxPollMs: number;
}
