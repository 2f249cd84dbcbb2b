// Starts the sandbox platform: Postgres-backed state, the HTTP API, the due-work ticker and the webhook sender.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createPgPool } from '@verdict/runtime/pool';
import { Agent } from 'undici';
import { WebhookEndpointRequestSchema } from '@verdict/contract/contract';
import { generateWebhookSecret } from '@verdict/contract/webhooks';
import { createApiHandler, setWebhookUrl } from './api.js';
import {
  DEFAULT_WEBHOOK_RETRY,
  SILENT_LOGGER,
  type SandboxContext,
  type SandboxLogger,
  type TrainingEngine,
  type WebhookRetryPolicy,
} from './context.js';
import { resolveFaults, type SandboxFaults } from './faults.js';
import type { AdapterServing, InferenceServerSetting } from '../engines/lora-adapters.js';
import type { AdapterRegistration } from '../engines/lora-adapters.js';
import { createTrainingSupervisor, type TrainingSupervisorOptions } from './training-supervisor.js';
import { processDueWork } from './due-work.js';
import { enqueueEvent } from './events.js';
import { startRunExecutor, type RunExecutor } from './run-executor.js';
import type { PromptStyle } from '../engines/inference.js';
import type { LoraHyperparameters } from '../engines/trainer.js';
import type { RunItem } from './answers.js';
import { adapterLookup, catalogueItems, defaultRenderPrompt, defaultScoreAnswer, startInferenceEngine } from '../engines/engine-setup.js';
import { createBenchmarkLibrary } from '../benchmarks/library.js';
import { findBenchmark } from './catalogue.js';
import { createRandom, hash32 } from './random.js';
import { migrateSandboxSchema } from './schema.js';
import { DEFAULT_SIMULATION, type SimulationSettings } from './simulator.js';
import { upsertBaseModels } from './store/models.js';
import { deleteSetting, ensureAccount, ensureSetting, setSetting } from './store/settings.js';
import { createWebhookSender, WEBHOOK_URL_SETTING, WEBHOOK_URL_UPDATED_SETTING } from './webhook-sender.js';

export type { SandboxFaults } from './faults.js';
export type { SandboxLogger, WebhookRetryPolicy } from './context.js';
export type { SimulationSettings } from './simulator.js';

export const DEFAULT_SEED = 104;
export const DEFAULT_STARTING_BALANCE = 1000;

export interface SandboxOptions {
  /** Postgres the sandbox keeps its state in, under its own schema `sandbox`. */
  databaseUrl: string;
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** API token; default: the one stored by an earlier start, else a new one. */
  token?: string;
  /** `whsec_...`; default: the stored one, else a new one. */
  webhookSecret?: string;
  /** Registers this webhook URL at start (same as `PUT /api/v1/webhook-endpoint`). */
  webhookUrl?: string;
  seed?: number;
  /** Multiplier on durations: a 100-question run takes about 60 s x timeScale, a training 150-1200 s x timeScale. */
  timeScale?: number;
  /** Balance of a new account; ignored when the database already has one. */
  startingBalance?: number;
  faults?: Partial<SandboxFaults>;
  simulation?: Partial<SimulationSettings>;
  webhookRetry?: Partial<WebhookRetryPolicy>;
  /** Base of `web_url` links; default the server's own URL. */
  publicUrl?: string;
  logger?: SandboxLogger;
  /** How often due work and webhooks are processed. Default 100 ms. */
  tickIntervalMs?: number;
  /** BENCHMARKS_DIR: `<id>.jsonl` benchmark files, served beside the built-in catalogue and uploads. */
  benchmarksDir?: string;
  /** Real LoRA training of the models a real engine serves; unset = they cannot be trained. */
  training?: SandboxTrainingOptions;
  /** Runs on a real inference engine; unset = runs are simulated. */
  inference?: SandboxInferenceOptions;
}

export interface SandboxInferenceOptions {
  /** An OpenAI-compatible endpoint root (`INFERENCE_URL`); unset = the embedded llama.cpp server over `modelsDir`. */
  url?: string;
  /** Sent as Bearer token to `url`. */
  apiKey?: string;
  /** Which server `url` is (vLLM, SGLang, other); default detected. */
  server?: InferenceServerSetting;
  /** The adapters folder as the server at `url` sees it; unset = the platform's own path. */
  serverAdaptersDir?: string;
  /** Style for models the endpoint does not say have a chat template. Default chat. */
  promptStyle?: PromptStyle;
  /** GGUF models (and produced adapters) the embedded server serves. */
  modelsDir?: string;
  /** CPU threads of the embedded server. Default: the number of cores. */
  threads?: number;
  /** Questions in flight at once over all runs. Default 4. */
  concurrency?: number;
  /** Price of run tokens per 1,000. Default {@link DEFAULT_RUN_CREDITS_PER_1K_TOKENS}. */
  creditsPer1kTokens?: number;
  /** Per inference call. Default 120 s. */
  timeoutMs?: number;
  retries?: number;
  retryBaseDelayMs?: number;
  /** A benchmark's questions; default the built-in exact-match catalogue benchmarks. */
  benchmarkItems?: (id: string) => Promise<RunItem[] | null>;
  renderPrompt?: (item: RunItem) => string;
  scoreAnswer?: (item: RunItem, output: string) => { extracted: string; score: number };
  /** How often the executor looks for work when nothing wakes it. Default 500 ms. */
  pollIntervalMs?: number;
}

export const DEFAULT_RUN_CREDITS_PER_1K_TOKENS = 0.1;

export interface SandboxTrainingOptions
  extends Omit<TrainingSupervisorOptions, 'registerAdapter' | 'baseModelPath'>,
    Partial<Pick<TrainingSupervisorOptions, 'registerAdapter' | 'baseModelPath'>> {
  /** Price per 1,000 trained tokens (dataset tokens x epochs); default by the base model's size. */
  creditsPer1kTokens?: number;
  /** Trained tokens per second expected on this machine, for the estimate. Default 500. */
  tokensPerSecond?: number;
  /** Tokens of `text` in the model's tokenizer; default the inference engine's count. */
  countTokens?(modelId: string, text: string): Promise<number>;
  /** LoRA hyperparameters over the trainer port's defaults; epochs come from each launch. */
  hyperparameters?: Partial<LoraHyperparameters>;
}

/**
 * The training defaults on a real inference engine: adapters are loaded into its endpoint, tokens
 * counted by it, and a base model's GGUF file is `<modelsDir>/<model id>.gguf`.
 */
function trainingEngine(
  ctx: SandboxContext,
  training: SandboxTrainingOptions,
  inference: SandboxInferenceOptions | undefined,
  adapters: AdapterServing | undefined,
): TrainingEngine {
  const modelsDir = inference?.modelsDir;
  const baseModelPath =
    training.baseModelPath ??
    ((id: string) => {
      if (!modelsDir || id.includes('/') || id.includes('\\') || id.startsWith('.')) return null;
      const file = path.join(modelsDir, `${id}.gguf`);
      return fs.existsSync(file) ? file : null;
    });
  const registerAdapter =
    training.registerAdapter ??
    (async (adapter: AdapterRegistration) => {
      if (!adapters) throw new Error('no inference endpoint to load the adapter into');
      await adapters.load(adapter);
    });
  const countTokens =
    training.countTokens ??
    (async (modelId: string, text: string) =>
      ctx.inference ? (await ctx.inference.engine.countTokens(modelId, text)).count : Math.ceil(Buffer.byteLength(text) / 3));
  return {
    trainer: training.trainer,
    supervisor: createTrainingSupervisor(ctx, { ...training, baseModelPath, registerAdapter }),
    creditsPer1kTokens: training.creditsPer1kTokens ?? null,
    tokensPerSecond: training.tokensPerSecond ?? 500,
    hyperparameters: training.hyperparameters ?? {},
    baseModelPath,
    countTokens,
  };
}

export interface SandboxHandle {
  /** Root URL of the server, e.g. `http://127.0.0.1:41234` (the API is under `/api/v1`). */
  url: string;
  token: string;
  webhookSecret: string;
  /** Label of the real inference engine runs go to (e.g. "llama.cpp, CPU, 2 threads"); null = simulated runs. */
  engine: string | null;
  /** Replaces the fault settings; omitted faults are off. */
  setFaults(faults: Partial<SandboxFaults>): void;
  /** Sets (or with null clears) the webhook URL, as `PUT /api/v1/webhook-endpoint` does. */
  setWebhookUrl(url: string | null): Promise<void>;
  /** Processes due work and sends due webhooks now; resolves when done. */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

interface Loop {
  run(): Promise<void>;
  readonly busy: boolean;
  idle(): Promise<void>;
}

function createLoop(work: () => Promise<void>, onError: (error: unknown) => void): Loop {
  let chain: Promise<void> = Promise.resolve();
  let busy = false;
  return {
    run() {
      chain = chain.then(async () => {
        busy = true;
        try {
          await work();
        } catch (error) {
          onError(error);
        } finally {
          busy = false;
        }
      });
      return chain;
    },
    get busy() {
      return busy;
    },
    idle: () => chain,
  };
}

/**
 * Starts a sandbox platform on `databaseUrl`. Safe to start again on the same database after a
 * crash: queued and running work carries its own finish time, completion (charge + webhook outbox
 * row) is one transaction, and undelivered webhooks are retried from the outbox.
 */
export async function startSandbox(options: SandboxOptions): Promise<SandboxHandle> {
  const logger = options.logger ?? SILENT_LOGGER;
  const seed = options.seed ?? DEFAULT_SEED;
  const timeScale = options.timeScale ?? 1;
  if (!(timeScale > 0)) throw new RangeError('timeScale must be > 0');
  let engineCleanup: (() => Promise<void>) | undefined;
  const pool = createPgPool(
    { connectionString: options.databaseUrl, max: 8, applicationName: 'verdict-bot sandbox' },
    (error) =>
    logger.error({ err: error }, 'sandbox database connection error'),
  );

  try {
    await migrateSandboxSchema(pool);
    const token =
      options.token ?? (await ensureSetting(pool, 'api_token', `sbx_${randomBytes(24).toString('base64url')}`));
    if (options.token) await setSetting(pool, 'api_token', options.token);
    const webhookSecret = options.webhookSecret ?? (await ensureSetting(pool, 'webhook_secret', generateWebhookSecret()));
    if (options.webhookSecret) await setSetting(pool, 'webhook_secret', options.webhookSecret);
    await ensureAccount(pool, options.startingBalance ?? DEFAULT_STARTING_BALANCE);
    await upsertBaseModels(pool);

    const stopping = new AbortController();
    // Every request slowed by an injected fault waits on this signal (and stops listening when done),
    // so many concurrent slow requests are expected, not a leak.
    setMaxListeners(0, stopping.signal);
    const host = options.host ?? '127.0.0.1';
    const ctx: SandboxContext = {
      pool,
      seed,
      timeScale,
      publicUrl: '',
      simulation: { ...DEFAULT_SIMULATION, ...options.simulation },
      webhookRetry: { ...DEFAULT_WEBHOOK_RETRY, ...options.webhookRetry },
      logger,
      faults: resolveFaults(options.faults),
      random: createRandom(hash32(seed, 'faults')),
      lineages: new Map(),
      models: new Map(),
      now: () => new Date(),
      benchmarks: createBenchmarkLibrary({ pool, ...(options.benchmarksDir ? { dir: options.benchmarksDir } : {}), isReserved: (id) => findBenchmark(id) !== undefined }),
    };
    let executor: RunExecutor | undefined;
    let adapters: AdapterServing | undefined;
    if (options.inference) {
      const engine = await startInferenceEngine(options.inference, logger, { lookupAdapter: adapterLookup(pool) });
      engineCleanup = engine.close;
      const inferenceOptions = options.inference;
      const renderPrompt = inferenceOptions.renderPrompt ?? defaultRenderPrompt;
      ctx.inference = {
        engine: engine.inference,
        creditsPer1kTokens: inferenceOptions.creditsPer1kTokens ?? DEFAULT_RUN_CREDITS_PER_1K_TOKENS,
        benchmarkItems: inferenceOptions.benchmarkItems ?? (async (id) => (await ctx.benchmarks.items(id)) ?? catalogueItems(seed, id)),
        renderPrompt,
        wake: () => executor?.wake(),
        cancelled: (runId) => executor?.cancelled(runId),
      };
      executor = startRunExecutor({
        pool,
        inference: engine.inference,
        concurrency: inferenceOptions.concurrency ?? 4,
        scoreAnswer: inferenceOptions.scoreAnswer ?? defaultScoreAnswer,
        emit: (client, type, runId, at) => enqueueEvent(ctx, client, type, runId, at),
        logger,
        now: () => ctx.now(),
        ...(inferenceOptions.pollIntervalMs !== undefined ? { pollIntervalMs: inferenceOptions.pollIntervalMs } : {}),
      });
      logger.info({ engine: engine.inference.label }, 'runs go to a real inference engine');
      adapters = engine.adapters;
    }
    if (options.training) ctx.training = trainingEngine(ctx, options.training, options.inference, adapters);

    const api = createApiHandler(ctx, token, stopping.signal);
    const server = http.createServer((request, response) => api.handle(request, response));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    const url = `http://${urlHost}:${address.port}`;
    ctx.publicUrl = (options.publicUrl ?? url).replace(/\/+$/, '');

    const setUrl = async (value: string | null) => {
      if (value === null) {
        await deleteSetting(pool, WEBHOOK_URL_SETTING);
        await deleteSetting(pool, WEBHOOK_URL_UPDATED_SETTING);
        return;
      }
      await setWebhookUrl(ctx, WebhookEndpointRequestSchema.parse({ url: value }).url);
    };
    if (options.webhookUrl !== undefined) await setUrl(options.webhookUrl);

    const agent = new Agent({ keepAliveTimeout: 1_000 });
    const sender = createWebhookSender(ctx, webhookSecret, agent);
    const worker = createLoop(
      () => processDueWork(ctx),
      (error) => logger.error({ err: error }, 'sandbox worker tick failed'),
    );
    const delivery = createLoop(
      () => sender.drain(),
      (error) => logger.error({ err: error }, 'sandbox webhook drain failed'),
    );
    const interval = options.tickIntervalMs ?? 100;
    const timer = setInterval(() => {
      if (!worker.busy) void worker.run();
      if (!delivery.busy) void delivery.run();
    }, interval);
    timer.unref();

    logger.info({ url, timeScale, seed }, 'sandbox platform started');

    let stopped: Promise<void> | null = null;
    return {
      url,
      token,
      webhookSecret,
      engine: ctx.inference?.engine.label ?? null,
      setFaults(faults) {
        ctx.faults = resolveFaults(faults);
      },
      setWebhookUrl: setUrl,
      async tick() {
        await worker.run();
        await delivery.run();
      },
      stop() {
        stopped ??= (async () => {
          clearInterval(timer);
          stopping.abort();
          sender.abort();
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeAllConnections();
          await api.settle();
          await worker.idle();
          await ctx.training?.supervisor.stop();
          await executor?.stop();
          await engineCleanup?.();
          await delivery.idle();
          await closed;
          await agent.close();
          await pool.end();
          logger.info({ url }, 'sandbox platform stopped');
        })();
        return stopped;
      },
    };
  } catch (error) {
    await engineCleanup?.().catch(() => undefined);
    await pool.end().catch(() => undefined);
    throw error;
  }
}
