// Environment configuration, validated once at start-up with zod.
import cron from 'node-cron';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_MODEL, parsePriceOverrides, type ModelPrices } from './agent/pricing.js';
import { DEFAULT_TOGETHER_API_URL } from './platform/engines/together-trainer.js';


const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const url = (what: string) =>
  optionalString.refine((value) => value === undefined || URL.canParse(value), {
    message: `must be an absolute URL (${what})`,
  });

const postgresUrl = optionalString.refine(
  (value) => {
    if (value === undefined) return true;
    if (!URL.canParse(value)) return false;
    const parsed = new URL(value);
    return (parsed.protocol === 'postgres:' || parsed.protocol === 'postgresql:') && parsed.hostname !== '';
  },
  { message: 'must be a postgres:// URL with a host, e.g. postgres://user:password@localhost:5432/verdict' },
);

const port = (fallback: number) =>
  optionalString
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .refine((value) => Number.isInteger(value) && value >= 0 && value <= 65535, {
      message: 'must be a TCP port from 1 to 65535 (0 picks a free one)',
    });

const cronSchedule = (fallback: string) =>
  optionalString
    .transform((value) => value ?? fallback)
    .refine((value) => cron.validate(value), {
      message: 'must be a cron schedule of 5 or 6 fields, e.g. "* * * * *" (every minute) or "*/30 * * * * *" (every 30 s)',
    });

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** What one process runs: both roles under one parent (`npm start`), or one role alone. */
export const ROLES = ['all', 'web', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Set by the parent of `npm start` on its worker child only (not a user setting): that worker hosts
 * the sandbox platform, on this port, sending its webhooks to this URL.
 */
export const SANDBOX_HOST_ENV = 'VERDICT_SANDBOX_HOST';

const sandboxHost = optionalString.transform((value, ctx) => {
  if (value === undefined) return undefined;
  try {
    const parsed = JSON.parse(value) as { port?: unknown; webhookUrl?: unknown };
    if (Number.isInteger(parsed.port) && typeof parsed.webhookUrl === 'string' && URL.canParse(parsed.webhookUrl)) {
      return { port: parsed.port as number, webhookUrl: parsed.webhookUrl };
    }
  } catch {
    // reported below
  }
  ctx.addIssue({ code: 'custom', message: 'is set by the parent process of npm start only: unset it' });
  return z.NEVER;
});

const positiveNumber = (fallback: number) =>
  optionalString
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .refine((value) => Number.isFinite(value) && value >= 0, { message: 'must be a non-negative number' });

const positiveInt = (fallback: number) =>
  optionalString
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .refine((value) => Number.isInteger(value) && value >= 0, { message: 'must be a non-negative integer' });

/** A JSON object of strings (Ray's own `RAY_JOB_HEADERS` format: `{"Authorization": "Bearer ..."}`). */
const jsonStrings = (example: string) =>
  optionalString
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        parsed = null;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.values(parsed).every((v) => typeof v === 'string')) {
        ctx.addIssue({ code: 'custom', message: `must be a JSON object of strings, e.g. ${example}` });
        return z.NEVER;
      }
      return parsed as Record<string, string>;
    });

/** A JSON object of non-negative numbers (Ray's `entrypoint_resources`). */
const jsonNumbers = (example: string) =>
  optionalString
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        parsed = null;
      }
      if (
        parsed === null ||
        typeof parsed !== 'object' ||
        Array.isArray(parsed) ||
        !Object.values(parsed).every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0)
      ) {
        ctx.addIssue({ code: 'custom', message: `must be a JSON object of non-negative numbers, e.g. ${example}` });
        return z.NEVER;
      }
      return parsed as Record<string, number>;
    });

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
const ENGINE_ENV = {
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

const EnvSchema = z
  .object({
    SLACK_BOT_TOKEN: optionalString.refine((v) => v !== undefined, {
      message: 'is required: the bot token (xoxb-...) from your Slack app\'s "OAuth & Permissions" page',
    }),
    SLACK_APP_TOKEN: optionalString,
    SLACK_SIGNING_SECRET: optionalString,
    SLACK_API_URL: url('Slack Web API base, e.g. https://slack.com/api/'),
    ANTHROPIC_API_KEY: optionalString.refine((v) => v !== undefined, {
      message: 'is required: an API key for the Messages API (set ANTHROPIC_BASE_URL for a compatible endpoint)',
    }),
    ANTHROPIC_BASE_URL: url('Messages API base URL'),
    AGENT_MODEL: optionalString.transform((v) => v ?? DEFAULT_MODEL),
    AGENT_PRICES: optionalString,
    AGENT_MAX_RETRIES: positiveInt(4),
    AGENT_TIMEOUT_MS: positiveInt(120_000),
    AGENT_EVENT_RETRY_ATTEMPTS: positiveInt(8),
    DATABASE_URL: postgresUrl,
    DATA_DIR: optionalString.transform((v) => v ?? '.data'),
    BENCHGEN_API_URL: url('platform API base URL'),
    BENCHGEN_API_TOKEN: optionalString,
    BENCHGEN_WEBHOOK_SECRET: optionalString,
    PUBLIC_URL: url('public base URL of this bot, used to register the webhook'),
    SANDBOX_TIME_SCALE: positiveNumber(1),
    SLACK_PACE_SCALE: optionalString
      .transform((value) => (value === undefined ? 1 : Number(value)))
      .refine((value) => Number.isFinite(value) && value > 0, { message: 'must be a number above 0 (1 is Slack\'s documented pace)' }),
    PORT: port(3000),
    WORKER_CONCURRENCY: positiveInt(8),
    SPEND_CONFIRM_THRESHOLD: positiveNumber(200),
    CHAT_BUDGET: positiveNumber(1000),
    SPEND_CAP_PERSON: positiveNumber(2000),
    SPEND_CAP_WORKSPACE: positiveNumber(10000),
    SPEND_CAP_DAYS: positiveInt(7),
    ADMIN_USER_IDS: optionalString,
    RECONCILE_CRON: cronSchedule('* * * * *'),
    RECONCILE_OVERDUE_SECONDS: positiveNumber(120),
    WORKER_STALE_SECONDS: positiveNumber(30),
    // A refinement, not z.enum, for the same reason as LOG_LEVEL below.
    ROLE: optionalString
      .transform((v) => v ?? 'all')
      .refine((v) => (ROLES as readonly string[]).includes(v), {
        message: 'must be all (the web and worker roles as two processes under one parent: npm start), web (Slack events, webhooks, /healthz) or worker (turns and sweeps)',
      }),
    [SANDBOX_HOST_ENV]: sandboxHost,
    ...ENGINE_ENV,
    // A refinement, not z.enum: a failed enum stops zod before the cross-variable checks below run.
    LOG_LEVEL: optionalString
      .transform((v) => v ?? 'info')
      .refine((v) => LOG_LEVELS.includes(v), { message: `must be one of ${LOG_LEVELS.join(', ')}` }),
  })
  .superRefine((env, ctx) => {
    if (!env.SLACK_APP_TOKEN && !env.SLACK_SIGNING_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['SLACK_SIGNING_SECRET'],
        message:
          'is required in HTTP mode (no SLACK_APP_TOKEN): copy it from "Basic Information" in your Slack app, or set SLACK_APP_TOKEN for Socket Mode',
      });
    }
    if (env.SLACK_APP_TOKEN && !env.SLACK_APP_TOKEN.startsWith('xapp-')) {
      ctx.addIssue({ code: 'custom', path: ['SLACK_APP_TOKEN'], message: 'must be an app-level token starting with xapp-' });
    }
    if (env.BENCHGEN_API_URL && !env.BENCHGEN_API_TOKEN) {
      ctx.addIssue({ code: 'custom', path: ['BENCHGEN_API_TOKEN'], message: 'is required when BENCHGEN_API_URL is set' });
    }
    if (env.BENCHGEN_API_URL && !env.BENCHGEN_WEBHOOK_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['BENCHGEN_WEBHOOK_SECRET'],
        message: 'is required when BENCHGEN_API_URL is set (the whsec_... secret the platform signs webhooks with)',
      });
    }
    // A role started alone shares the Postgres and the platform of the others: it starts neither.
    const alone = env.ROLE === 'web' || env.ROLE === 'worker';
    const supervisedSandbox = env.ROLE === 'worker' && env[SANDBOX_HOST_ENV] !== undefined;
    if (alone && !env.DATABASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['DATABASE_URL'],
        message: `is required with ROLE=${env.ROLE}: roles started alone share one PostgreSQL (only npm start, ROLE=all, starts an embedded one)`,
      });
    }
    if (env.ROLE === 'worker' && !env.BENCHGEN_API_URL && !supervisedSandbox) {
      ctx.addIssue({
        code: 'custom',
        path: ['BENCHGEN_API_URL'],
        message:
          'is required with ROLE=worker: a worker started alone does not run the sandbox platform (npm start runs it in its own worker); run the platform on its own (e.g. npm run sandbox) and give every role BENCHGEN_API_URL, BENCHGEN_API_TOKEN and BENCHGEN_WEBHOOK_SECRET',
      });
    }
    if (env.ROLE === 'web' && !env.BENCHGEN_WEBHOOK_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['BENCHGEN_WEBHOOK_SECRET'],
        message: "is required with ROLE=web: the web role verifies the platform's webhooks with it (the same whsec_... secret the platform signs with)",
      });
    }
    if (env[SANDBOX_HOST_ENV] !== undefined && env.ROLE !== 'worker') {
      ctx.addIssue({ code: 'custom', path: [SANDBOX_HOST_ENV], message: 'is set by the parent process of npm start for its worker only: unset it' });
    }
    if (env.INFERENCE_API_KEY && !env.INFERENCE_URL) {
      ctx.addIssue({ code: 'custom', path: ['INFERENCE_API_KEY'], message: 'is set but INFERENCE_URL is not: set the endpoint it is for' });
    }
    for (const problem of [...rayProblems(env), ...togetherProblems(env)]) {
      ctx.addIssue({ code: 'custom', path: [problem.variable], message: problem.detail });
    }
    if (env.AGENT_PRICES) {
      try {
        parsePriceOverrides(env.AGENT_PRICES);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['AGENT_PRICES'], message: (error as Error).message });
      }
    }
  });

export interface Config {
  slack: {
    botToken: string;
    appToken: string | undefined;
    signingSecret: string | undefined;
    apiUrl: string | undefined;
    socketMode: boolean;
    /** The bot's pace of Slack writes, as a multiple of Slack's documented pace (SLACK_PACE_SCALE). */
    paceScale: number;
  };
  agent: {
    apiKey: string;
    baseUrl: string | undefined;
    model: string;
    priceOverrides: Record<string, ModelPrices>;
    maxRetries: number;
    timeoutMs: number;
    eventRetryAttempts: number;
  };
  databaseUrl: string | undefined;
  dataDir: string;
  platform: {
    apiUrl: string | undefined;
    apiToken: string | undefined;
    webhookSecret: string | undefined;
    sandboxTimeScale: number;
  };
  publicUrl: string | undefined;
  port: number;
  workerConcurrency: number;
  spending: {
    confirmThreshold: number;
    chatBudget: number;
    /** Credits one person (over the threads they started) may spend per period without an Approve click. */
    personCap: number;
    /** Credits the whole workspace may spend per period without an Approve click. */
    workspaceCap: number;
    capPeriodDays: number;
    adminUserIds: string[];
  };
  reconcile: { cron: string; overdueSeconds: number };
  workerStaleSeconds: number;
  /** `all` = both roles (as separate processes under `npm start`, or in one process with startBot). */
  role: Role;
  /** Set only on the worker child of `npm start` that hosts the sandbox platform. */
  sandboxHost: { port: number; webhookUrl: string } | undefined;
  /** Where runs go: unset (neither MODELS_DIR nor INFERENCE_URL) = the simulator. */
  engines: EngineConfig;
  logLevel: string;
}

/** Reads only the engine variables (for `npm run sandbox`); throws {@link ConfigError} like {@link loadConfig}. */
export function loadEngineConfig(env: NodeJS.ProcessEnv = process.env): EngineConfig {
  const parsed = z.object(ENGINE_ENV).safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(problemsOf(parsed.error.issues));
  }
  if (parsed.data.INFERENCE_API_KEY && !parsed.data.INFERENCE_URL) {
    throw new ConfigError([{ variable: 'INFERENCE_API_KEY', detail: 'is set but INFERENCE_URL is not: set the endpoint it is for' }]);
  }
  const problems = [...rayProblems(parsed.data), ...togetherProblems(parsed.data)];
  if (problems.length > 0) throw new ConfigError(problems);
  return engineConfig(parsed.data);
}

function engineConfig(e: z.output<z.ZodObject<typeof ENGINE_ENV>>): EngineConfig {
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

function isFolder(value: string): boolean {
  try {
    return fs.statSync(value).isDirectory();
  } catch {
    return false;
  }
}

export interface ConfigProblem {
  variable: string;
  detail: string;
}

/**
 * Thrown for missing or invalid variables. The message is one line per problem, each naming its
 * variable and what to do; `variable` is the first one named.
 */
export class ConfigError extends Error {
  readonly variable: string;
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[]) {
    const lines = problems.map((p) => `${p.variable} ${p.detail}`);
    super(lines.length === 1 ? `Configuration error: ${lines[0]}` : `Configuration errors (${lines.length}):\n  ${lines.join('\n  ')}`);
    this.name = 'ConfigError';
    this.variable = problems[0]?.variable ?? 'environment';
    this.problems = problems;
  }
}

/** One problem per variable (the first zod found): a value that fails two checks is one line. */
function problemsOf(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): ConfigProblem[] {
  const byVariable = new Map<string, ConfigProblem>();
  for (const issue of issues) {
    const variable = String(issue.path[0] ?? 'environment');
    if (!byVariable.has(variable)) byVariable.set(variable, { variable, detail: issue.message });
  }
  return [...byVariable.values()];
}

/** Reads and validates the environment. Throws {@link ConfigError} listing every problem found. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(problemsOf(parsed.error.issues));
  }
  const e = parsed.data;
  return {
    slack: {
      botToken: e.SLACK_BOT_TOKEN!,
      appToken: e.SLACK_APP_TOKEN,
      signingSecret: e.SLACK_SIGNING_SECRET,
      apiUrl: e.SLACK_API_URL,
      socketMode: e.SLACK_APP_TOKEN !== undefined,
      paceScale: e.SLACK_PACE_SCALE,
    },
    agent: {
      apiKey: e.ANTHROPIC_API_KEY!,
      baseUrl: e.ANTHROPIC_BASE_URL,
      model: e.AGENT_MODEL,
      priceOverrides: e.AGENT_PRICES ? parsePriceOverrides(e.AGENT_PRICES) : {},
      maxRetries: e.AGENT_MAX_RETRIES,
      timeoutMs: e.AGENT_TIMEOUT_MS,
      eventRetryAttempts: Math.max(1, e.AGENT_EVENT_RETRY_ATTEMPTS),
    },
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    platform: {
      apiUrl: e.BENCHGEN_API_URL,
      apiToken: e.BENCHGEN_API_TOKEN,
      webhookSecret: e.BENCHGEN_WEBHOOK_SECRET,
      sandboxTimeScale: e.SANDBOX_TIME_SCALE,
    },
    publicUrl: e.PUBLIC_URL,
    port: e.PORT,
    workerConcurrency: Math.max(1, e.WORKER_CONCURRENCY),
    spending: {
      confirmThreshold: e.SPEND_CONFIRM_THRESHOLD,
      chatBudget: e.CHAT_BUDGET,
      personCap: e.SPEND_CAP_PERSON,
      workspaceCap: e.SPEND_CAP_WORKSPACE,
      capPeriodDays: e.SPEND_CAP_DAYS,
      adminUserIds: (e.ADMIN_USER_IDS ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    reconcile: { cron: e.RECONCILE_CRON, overdueSeconds: e.RECONCILE_OVERDUE_SECONDS },
    workerStaleSeconds: e.WORKER_STALE_SECONDS,
    role: e.ROLE as Role,
    sandboxHost: e[SANDBOX_HOST_ENV],
    engines: engineConfig(e),
    logLevel: e.LOG_LEVEL,
  };
}
