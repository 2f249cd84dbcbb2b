// Hosted LoRA training on Together: the dataset uploaded through its files API, a fine-tuning job launched once, followed by polling, served by Together's inference.
// About 400 lines: one Trainer whose steps (upload, launch, follow, cancel, reattach) share one job's state; Together's HTTP client is together-api.ts.
import { createHash } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  DEFAULT_LORA_HYPERPARAMETERS,
  type LoraHyperparameters,
  type OrphanStop,
  type Trainer,
  type TrainerEvent,
  type TrainerJob,
  type TrainingExample,
  type TrainingQuote,
  type TrainingQuoteRequest,
  type TrainingSpec,
} from './trainer.js';
import type { TrainerLogger } from './pytorch-trainer.js';
import { sleep } from '../sleep.js';
import { TogetherError, createTogetherCall } from './together-api.js';

export const DEFAULT_TOGETHER_API_URL = 'https://api.together.xyz/v1';

export interface TogetherTrainerOptions {
  apiKey: string;
  /** Together's API base including `/v1` (`TOGETHER_API_URL`). Default {@link DEFAULT_TOGETHER_API_URL}. */
  apiUrl?: string;
  /**
   * How a `{prompt, completion}` example is uploaded: `chat` as a user/assistant `messages`
   * conversation (runs ask chat models through chat/completions), `completion` as Together's
   * instruction format. Default chat.
   */
  promptStyle?: 'chat' | 'completion';
  /** Platform credits per US dollar of Together's price. Default 1. */
  creditsPerDollar?: number;
  /** First poll interval; doubled after every unchanged poll up to `maxPollMs`. Default 5 s. */
  pollMs?: number;
  /** Default 60 s. */
  maxPollMs?: number;
  /** Attempts of one call on 429, 5xx and network errors. Default 5. */
  attempts?: number;
  /** Base of the retry backoff when no Retry-After is given. Default 500 ms. */
  retryBaseMs?: number;
  /** Per call. Default 60 s. */
  timeoutMs?: number;
  /**
   * Our model ids to Together's model names (`TOGETHER_MODEL_MAP`), for a base model served under
   * another name (a GGUF file, a vLLM server). An id not in it is sent as is.
   */
  modelMap?: Record<string, string>;
  logger?: TrainerLogger;
}

/** A Together fine-tuning job as its API returns it (the fields this trainer reads). */
interface FineTune {
  id: string;
  status: string;
  suffix?: string | null;
  output_name?: string | null;
  model_output_name?: string | null;
  steps_completed?: number | null;
  total_steps?: number | null;
  epochs_completed?: number | null;
  n_epochs?: number | null;
  message?: string | null;
}

interface FineTuneEvent {
  created_at?: string;
  level?: string | null;
  message?: string;
  type?: string;
  step?: number | null;
  total_steps?: number | null;
}

/** What is kept in the training's work folder to reattach after a restart. */
interface JobState {
  submissionId: string;
  suffix: string;
  fileId?: string;
  fineTuneId?: string;
}

const TERMINAL_FAILED = new Set(['error', 'failed', 'user_error', 'cancelled', 'canceled']);

/** GGUF tensor names (our hyperparameters) to the Hugging Face module names Together's `lora_trainable_modules` takes. */
const MODULES: Record<string, string> = {
  attn_q: 'q_proj',
  attn_k: 'k_proj',
  attn_v: 'v_proj',
  attn_output: 'o_proj',
  ffn_gate: 'gate_proj',
  ffn_up: 'up_proj',
  ffn_down: 'down_proj',
};

/** The fine-tune's suffix, which carries our training id so the job can be found again (Together: up to 40 characters). */
export function togetherSuffix(trainingId: string): string {
  return `vb-${trainingId.replace(/[^A-Za-z0-9-]/g, '-')}`.slice(0, 40);
}

/**
 * Our `{prompt, completion}` lines in a format Together's fine-tuning accepts, each in the form its
 * run asked it (its `style`, else `style`): chat as one user and one assistant message (Together
 * applies the model's chat template and trains the assistant's turn), completion as is.
 */
export function togetherDataset(examples: ReadonlyArray<TrainingExample>, style: 'chat' | 'completion'): string {
  return (
    examples
      .map((e) =>
        JSON.stringify(
          (e.style ?? style) === 'chat'
            ? { messages: [{ role: 'user', content: e.prompt }, { role: 'assistant', content: e.completion.trim() }] }
            : { prompt: e.prompt, completion: e.completion },
        ),
      )
      .join('\n') + '\n'
  );
}

function parseExamples(jsonl: string): TrainingExample[] {
  return jsonl
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const value = JSON.parse(line) as TrainingExample;
      return { prompt: value.prompt, completion: value.completion, ...(value.style ? { style: value.style } : {}) };
    });
}

function trainingType(h: LoraHyperparameters): Record<string, unknown> {
  const modules = h.targetModules.map((m) => MODULES[m]).filter((m): m is string => m !== undefined);
  return {
    type: 'Lora',
    lora_r: h.rank,
    lora_alpha: h.alpha,
    ...(modules.length > 0 ? { lora_trainable_modules: modules.join(',') } : {}),
  };
}

/**
 * A {@link Trainer} that trains on Together. `start` looks the job up before launching: by the
 * fine-tune id kept in `workDir/together.json`, else by the suffix carrying the training id among
 * the account's fine-tunes; only when neither finds one does it upload the dataset (once per
 * content: the file name carries its hash) and create the job. The job is then polled with
 * backoff; its events are logged and the last error event names a failure.
 */
export function createTogetherTrainer(options: TogetherTrainerOptions): Trainer {
  const base = (options.apiUrl ?? DEFAULT_TOGETHER_API_URL).replace(/\/+$/, '');
  const style = options.promptStyle ?? 'chat';
  const creditsPerDollar = options.creditsPerDollar ?? 1;
  const pollMs = options.pollMs ?? 5_000;
  const maxPollMs = options.maxPollMs ?? 60_000;
  const logger = options.logger;
  const call = createTogetherCall({
    base,
    apiKey: options.apiKey,
    attempts: Math.max(1, options.attempts ?? 5),
    retryBaseMs: options.retryBaseMs ?? 500,
    timeoutMs: options.timeoutMs ?? 60_000,
    logger,
  });

  let supported: Promise<string[] | null> | null = null;

  /**
   * Together's name of a base model: mapped by `modelMap`, else the id itself; refused in the
   * user's words when Together's list of fine-tunable models does not have it (a list Together
   * cannot give skips the check, and Together judges the launch itself).
   */
  async function togetherModel(id: string): Promise<string> {
    const name = options.modelMap?.[id] ?? id;
    supported ??= call<{ models?: unknown }>('GET', '/fine-tunes/models/supported').then(
      (body) => (Array.isArray(body.models) ? body.models.filter((m): m is string => typeof m === 'string') : null),
      (error: unknown) => {
        logger?.warn({ err: error }, "Together's list of fine-tunable models not read; the model name is not checked");
        supported = null;
        return null;
      },
    );
    const models = await supported;
    if (!models || models.includes(name)) return name;
    const mapped = options.modelMap?.[id] !== undefined;
    const examples = models.slice(0, 3).join(', ');
    throw new TogetherError(
      mapped
        ? `Together cannot fine-tune ${name} (TOGETHER_MODEL_MAP's name for ${id}): it is not among the models Together fine-tunes (for example ${examples})`
        : `Together cannot fine-tune ${id}: it is not among the models Together fine-tunes (for example ${examples}); if it is one of them under another name, map it with TOGETHER_MODEL_MAP={"${id}":"<Together model name>"}`,
      400,
    );
  }

  /** The file id of this dataset on Together, uploading it only when no file of that content is there. */
  async function datasetFile(content: string): Promise<string> {
    const name = `verdict-bot-${createHash('sha256').update(content).digest('hex').slice(0, 16)}.jsonl`;
    const files = await call<{ data?: Array<{ id: string; filename?: string; purpose?: string }> }>('GET', '/files');
    const existing = files.data?.find((f) => f.filename === name);
    if (existing) return existing.id;
    const form = new FormData();
    form.append('purpose', 'fine-tune');
    form.append('file_name', name);
    form.append('file_type', 'jsonl');
    form.append('file', new Blob([content], { type: 'application/jsonl' }), name);
    const uploaded = await call<{ id: string }>('POST', '/files/upload', form);
    logger?.info({ fileId: uploaded.id, name }, 'dataset uploaded to Together');
    return uploaded.id;
  }

  async function estimate(request: TrainingQuoteRequest): Promise<TrainingQuote> {
    const model = await togetherModel(request.baseModelId);
    const fileId = await datasetFile(togetherDataset(request.examples, style));
    const quote = await call<{
      estimated_total_price?: number;
      allowed_to_proceed?: boolean;
      user_limit?: number;
      estimated_train_token_count?: number;
    }>('POST', '/fine-tunes/estimate-price', {
      training_file: fileId,
      model,
      n_epochs: request.hyperparameters.epochs,
      training_method: { method: 'sft' },
      training_type: trainingType(request.hyperparameters),
    });
    const dollars = quote.estimated_total_price;
    if (typeof dollars !== 'number' || !Number.isFinite(dollars)) {
      throw new TogetherError('Together says: no price for this fine-tuning job (estimate-price returned none)', null);
    }
    if (quote.allowed_to_proceed === false) {
      const limit = typeof quote.user_limit === 'number' ? ` (your limit: $${quote.user_limit})` : '';
      throw new TogetherError(
        `Together says: insufficient balance: this fine-tuning job is estimated at $${dollars}, more than your Together balance and credit limit allow${limit}`,
        402,
      );
    }
    return {
      priceCredits: Math.max(0.01, Math.round(dollars * creditsPerDollar * 100) / 100),
      ...(typeof quote.estimated_train_token_count === 'number' ? { trainedTokens: quote.estimated_train_token_count } : {}),
    };
  }

  async function readState(file: string): Promise<JobState | null> {
    const text = await readFile(file, 'utf8').catch(() => null);
    return text === null ? null : (JSON.parse(text) as JobState);
  }

  async function writeState(file: string, state: JobState): Promise<void> {
    await writeFile(`${file}.tmp`, JSON.stringify(state));
    await rename(`${file}.tmp`, file);
  }

  /** The job of this submission: by the stored fine-tune id, else by its suffix among the account's fine-tunes. */
  async function findJob(state: JobState): Promise<FineTune | null> {
    if (state.fineTuneId) return call<FineTune>('GET', `/fine-tunes/${encodeURIComponent(state.fineTuneId)}`);
    const list = await call<{ data?: FineTune[] }>('GET', '/fine-tunes');
    const jobs = (list.data ?? []).filter(
      (job) => job.suffix === state.suffix || (job.output_name ?? job.model_output_name ?? '').endsWith(state.suffix),
    );
    return jobs.find((job) => !TERMINAL_FAILED.has(job.status)) ?? jobs[0] ?? null;
  }

  /**
   * The fine-tune of a training no process follows, found as `launch` finds it (the id kept in the
   * work folder, else the suffix), cancelled unless it has ended or a cancel is already under way.
   */
  async function stopOrphan(spec: TrainingSpec): Promise<OrphanStop> {
    const state = (await readState(path.join(spec.workDir, 'together.json'))) ?? { submissionId: spec.jobId, suffix: togetherSuffix(spec.jobId) };
    let job: FineTune | null;
    try {
      job = await findJob(state);
    } catch (error) {
      if (error instanceof TogetherError && error.status === 404) return { outcome: 'not_found', remoteId: state.fineTuneId ?? null };
      throw error;
    }
    if (!job) return { outcome: 'not_found', remoteId: null };
    if (job.status === 'completed' || job.status === 'cancel_requested' || TERMINAL_FAILED.has(job.status)) {
      return { outcome: 'already_finished', remoteId: job.id, status: job.status };
    }
    await call('POST', `/fine-tunes/${encodeURIComponent(job.id)}/cancel`);
    return { outcome: 'stopped', remoteId: job.id, status: job.status };
  }

  /** Starts or reattaches; Together refusing the job (4xx) is a failed job in its words, not a crash to retry. */
  async function start(spec: TrainingSpec, onEvent: (event: TrainerEvent) => void): Promise<TrainerJob> {
    try {
      return await launch(spec, onEvent);
    } catch (error) {
      if (!(error instanceof TogetherError) || error.status === null) throw error;
      return { done: Promise.resolve({ type: 'failed', message: error.message }), cancel: async () => undefined };
    }
  }

  async function launch(spec: TrainingSpec, onEvent: (event: TrainerEvent) => void): Promise<TrainerJob> {
    const stateFile = path.join(spec.workDir, 'together.json');
    const state: JobState = (await readState(stateFile)) ?? { submissionId: spec.jobId, suffix: togetherSuffix(spec.jobId) };
    let job = await findJob(state);
    if (job && TERMINAL_FAILED.has(job.status) && !state.fineTuneId) job = null;
    if (job) {
      logger?.info({ trainingId: spec.jobId, fineTuneId: job.id, status: job.status }, 'reattached to the Together fine-tune');
    } else {
      if (!spec.baseModelId) throw new TogetherError('Together needs the base model name of the training', null);
      const model = await togetherModel(spec.baseModelId);
      const content = togetherDataset(parseExamples(await readFile(spec.datasetPath, 'utf8')), style);
      state.fileId = await datasetFile(content);
      await writeState(stateFile, state);
      const h = { ...DEFAULT_LORA_HYPERPARAMETERS, ...spec.hyperparameters };
      job = await call<FineTune>('POST', '/fine-tunes', {
        training_file: state.fileId,
        model,
        n_epochs: h.epochs,
        learning_rate: h.learningRate,
        suffix: state.suffix,
        training_method: { method: 'sft' },
        training_type: trainingType(h),
      });
      logger?.info({ trainingId: spec.jobId, fineTuneId: job.id }, 'Together fine-tune created');
    }
    state.fineTuneId = job.id;
    await writeState(stateFile, state);
    return follow(job, onEvent);
  }

  function follow(first: FineTune, onEvent: (event: TrainerEvent) => void): TrainerJob {
    const stop = new AbortController();
    let stopReason: string | null = null;
    const startedAt = Date.now();
    const id = first.id;
    let seenEvents = 0;
    let lastError: string | null = null;
    let lastLoss = Number.NaN;

    async function readEvents(): Promise<void> {
      const events = await call<{ data?: FineTuneEvent[] }>('GET', `/fine-tunes/${encodeURIComponent(id)}/events`, undefined, stop.signal);
      const list = events.data ?? [];
      for (const event of list.slice(seenEvents)) {
        if (event.level === 'error' || event.type?.includes('error')) lastError = event.message ?? lastError;
        const loss = /loss[^0-9-]*(-?[0-9.]+(?:e-?\d+)?)/i.exec(event.message ?? '');
        if (loss) lastLoss = Number(loss[1]);
        logger?.info({ fineTuneId: id, type: event.type, message: event.message }, 'Together fine-tune event');
      }
      seenEvents = list.length;
    }

    const done = (async (): Promise<Extract<TrainerEvent, { type: 'completed' | 'failed' }>> => {
      let job = first;
      let wait = pollMs;
      let lastKey = '';
      for (;;) {
        if (stopReason) return { type: 'failed', message: stopReason };
        try {
          await readEvents();
        } catch (error) {
          if (stopReason) return { type: 'failed', message: stopReason };
          logger?.warn({ err: error, fineTuneId: id }, 'Together fine-tune events not read');
        }
        const step = job.steps_completed ?? 0;
        const total = job.total_steps ?? 0;
        if (total > 0) onEvent({ type: 'progress', step, totalSteps: total, epoch: job.epochs_completed ?? 0, loss: lastLoss });
        if (job.status === 'completed') {
          const servedModel = job.output_name ?? job.model_output_name;
          if (!servedModel) return { type: 'failed', message: `Together says: fine-tune ${id} completed without an output model name` };
          return {
            type: 'completed',
            adapterPath: '',
            servedModel,
            metrics: { finalLoss: lastLoss, steps: step || total, seconds: (Date.now() - startedAt) / 1000 },
          };
        }
        if (TERMINAL_FAILED.has(job.status)) {
          const why = job.status.startsWith('cancel')
            ? 'the fine-tuning job was cancelled'
            : (lastError ?? job.message ?? `the fine-tuning job ended with status ${job.status}`);
          return { type: 'failed', message: `Together says: ${why} (fine-tune ${id})` };
        }
        const key = `${job.status}:${step}`;
        wait = key === lastKey ? Math.min(maxPollMs, wait * 2) : pollMs;
        lastKey = key;
        await sleep(wait, stop.signal);
        if (stopReason) return { type: 'failed', message: stopReason };
        try {
          job = await call<FineTune>('GET', `/fine-tunes/${encodeURIComponent(id)}`, undefined, stop.signal);
        } catch (error) {
          if (stopReason) return { type: 'failed', message: stopReason };
          if (error instanceof TogetherError && error.status !== null) return { type: 'failed', message: error.message };
          logger?.warn({ err: error, fineTuneId: id }, 'Together fine-tune status not read; polling on');
        }
      }
    })();

    return {
      done,
      remoteId: id,
      async cancel() {
        if (stopReason) return;
        stopReason = `the training was cancelled; Together fine-tune ${id} was cancelled`;
        stop.abort();
        await call('POST', `/fine-tunes/${encodeURIComponent(id)}/cancel`).catch((error: unknown) => {
          logger?.error({ err: error, fineTuneId: id }, 'Together fine-tune not cancelled');
          throw error;
        });
      },
      async detach() {
        stopReason ??= `stopped following Together fine-tune ${id}; it keeps running and is reattached on the next start`;
        stop.abort();
      },
    };
  }

  return {
    label: `Together fine-tuning (LoRA) at ${base}`,
    needsBaseModelFile: false,
    async availability() {
      return { ok: true };
    },
    start,
    estimate,
    stopOrphan,
  };
}
