// The bundled LoRA trainer as a Ray job: inputs on storage the cluster shares, one submission per training, followed by polling its status and logs.
// About 400 lines: one Trainer whose steps (stage, submit, follow, cancel, reattach) share one job's state; the REST client is ray-jobs.ts.
import type { Llama } from 'node-llama-cpp';
import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadCpuLlama } from './llama-cpu.js';
import { TRAINER_SCRIPT, trainerEventSchema, type TrainerLogger } from './pytorch-trainer.js';
import { sleep } from '../sleep.js';
import { RAY_TERMINAL, RayError, createRayJobsClient, type RayJobDetails, type RayJobsClient, failureSummary } from './ray-jobs.js';
import { bundledTrainerRefusal } from './trainer-base-model.js';
import { ChatFormError, readExamples, tokenizeExamples } from './trainer-examples.js';
import { DEFAULT_LORA_HYPERPARAMETERS, peftAdapterDir, type OrphanStop, type Trainer, type TrainerDevice, type TrainerEvent, type TrainerJob, type TrainingExample, type TrainingSpec } from './trainer.js';
import { copyFolderInto, copyInto, inside, nonEmptyFile } from './shared-files.js';

export interface RayTrainerOptions {
  /** The dashboard's HTTP address (`RAY_ADDRESS`), e.g. `http://ray-head:8265`. */
  address: string;
  /** Shared storage as this machine mounts it (`RAY_SHARED_DIR`). */
  sharedDir: string;
  /** The same storage as the cluster's nodes mount it (`RAY_CLUSTER_SHARED_DIR`). Default `sharedDir`. */
  clusterSharedDir?: string;
  /** Sent with every Jobs API call (token auth, a proxy's header). */
  headers?: Record<string, string>;
  /** GPUs a job reserves (`entrypoint_num_gpus`). Default 1; 0 = none. */
  numGpus?: number;
  /** CPUs a job reserves (`entrypoint_num_cpus`), also the trainer's threads. Default 1. */
  numCpus?: number;
  /** Custom resources a job reserves (`entrypoint_resources`). */
  resources?: Record<string, number>;
  /** The python on the cluster's nodes that has torch and numpy. Default `python3`. */
  python?: string;
  /** Where the job computes (`TRAINER_DEVICE`). Default auto: CUDA when the node's torch finds a GPU. */
  device?: TrainerDevice;
  /** First poll interval; doubled after every unchanged poll up to `maxPollMs`. Default 2 s. */
  pollMs?: number;
  /** Default 30 s. */
  maxPollMs?: number;
  /** Attempts of one Jobs API call on 429, 5xx and network errors. Default 5. */
  attempts?: number;
  retryBaseMs?: number;
  timeoutMs?: number;
  logger?: TrainerLogger;
  /** node-llama-cpp instance to tokenize with; one is created on first use otherwise. */
  llama?: Llama;
}

type Done = Extract<TrainerEvent, { type: 'completed' | 'failed' }>;

/** Where a job's files are, on this machine and as the cluster sees them. */
interface JobFiles {
  jobDir: string;
  /** Where the job writes the adapter (this machine's path). */
  adapter: string;
  /** Where the job writes the adapter's PEFT folder (this machine's path). */
  peft: string;
}

const TRAINER_DIR = path.dirname(TRAINER_SCRIPT);

/**
 * The Ray submission id of a training: our training id plus a fingerprint of what it trains (base
 * model, hyperparameters, examples). A retry or a restarted platform computes the same id and finds
 * the job; a training id reused by a new database never picks up an old job.
 */
export function raySubmissionId(trainingId: string, baseModel: string, hyperparameters: object, examples: ReadonlyArray<TrainingExample>): string {
  const fingerprint = createHash('sha256')
    .update(JSON.stringify({ v: 1, baseModel, hyperparameters, examples }))
    .digest('hex')
    .slice(0, 12);
  return `verdict-bot-${trainingId.replace(/[^A-Za-z0-9_-]/g, '-')}-${fingerprint}`;
}

/** A path for a POSIX shell, single-quoted. */
const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;


/**
 * A {@link Trainer} that runs the bundled trainer (trainer/lora_train.py) as a Ray job. `start`
 * looks the job up by its submission id first; only when the cluster has none does it put the
 * inputs on the shared storage (the trainer's code, the base model unless it already is there, the
 * tokenized dataset and the spec) and submit. The job is then polled with backoff: progress comes
 * from the trainer's JSON lines in the job's logs, the adapter from the shared storage.
 */
export function createRayTrainer(options: RayTrainerOptions): Trainer {
  const sharedDir = path.resolve(options.sharedDir);
  const clusterSharedDir = options.clusterSharedDir ?? sharedDir;
  const numGpus = options.numGpus ?? 1;
  const numCpus = options.numCpus ?? 1;
  const python = options.python ?? 'python3';
  const device = options.device ?? 'auto';
  const pollMs = options.pollMs ?? 2_000;
  const maxPollMs = Math.max(pollMs, options.maxPollMs ?? 30_000);
  const logger = options.logger;
  const client: RayJobsClient = createRayJobsClient({
    address: options.address,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.attempts !== undefined ? { attempts: options.attempts } : {}),
    ...(options.retryBaseMs !== undefined ? { retryBaseMs: options.retryBaseMs } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(logger ? { logger } : {}),
  });
  const root = path.join(sharedDir, 'verdict-bot');
  let llamaPromise: Promise<Llama> | null = options.llama ? Promise.resolve(options.llama) : null;

  /** This machine's path under the shared folder, as the cluster's nodes see it. */
  const onCluster = (local: string) => path.posix.join(clusterSharedDir, path.relative(sharedDir, local).split(path.sep).join('/'));

  function files(spec: TrainingSpec, submissionId: string): JobFiles {
    const jobDir = path.join(root, 'jobs', submissionId);
    // An adapters folder on the shared storage is written straight away; otherwise the adapter is copied there after the job.
    const adapter = inside(sharedDir, spec.adapterPath) ? spec.adapterPath : path.join(jobDir, 'adapter.gguf');
    return { jobDir, adapter, peft: peftAdapterDir(adapter) };
  }

  /** The trainer's code on the shared storage, once per version of it. */
  async function shipTrainer(): Promise<string> {
    const names = (await readdir(TRAINER_DIR)).filter((name) => name.endsWith('.py')).sort();
    const hash = createHash('sha256');
    const contents = new Map<string, Buffer>();
    for (const name of names) {
      const content = await readFile(path.join(TRAINER_DIR, name));
      contents.set(name, content);
      hash.update(name).update(content);
    }
    const dir = path.join(root, 'trainer', hash.digest('hex').slice(0, 12));
    const entry = path.join(dir, path.basename(TRAINER_SCRIPT));
    if (await nonEmptyFile(entry)) return entry;
    await mkdir(dir, { recursive: true });
    // The entry script last: its presence means the folder is whole.
    for (const name of [...names.filter((n) => n !== path.basename(entry)), path.basename(entry)]) {
      const temp = path.join(dir, `.${name}.tmp-${process.pid}`);
      await writeFile(temp, contents.get(name)!);
      await rename(temp, path.join(dir, name));
    }
    return entry;
  }

  /** The base model on the shared storage: where it is when it already is there, else a copy made once. */
  async function shipModel(baseModelPath: string): Promise<string> {
    const local = path.resolve(baseModelPath);
    if (inside(sharedDir, local)) return local;
    const info = await stat(local);
    const name = `${path.basename(local, '.gguf')}-${info.size}-${Math.round(info.mtimeMs)}.gguf`;
    const target = path.join(root, 'models', name);
    if ((await stat(target).catch(() => null))?.size !== info.size) {
      logger?.info({ from: local, to: target, bytes: info.size }, 'copying the base model to the storage the Ray cluster shares');
      await copyInto(local, target);
    }
    return target;
  }

  async function tokenize(baseModelPath: string, examples: TrainingExample[]) {
    llamaPromise ??= loadCpuLlama();
    const model = await (await llamaPromise).loadModel({ modelPath: baseModelPath, vocabOnly: true });
    try {
      return tokenizeExamples(model, examples);
    } finally {
      await model.dispose();
    }
  }

  /** Puts the job's inputs on the shared storage and submits it; or finds it submitted already. */
  async function submit(spec: TrainingSpec, submissionId: string, job: JobFiles, examples: TrainingExample[]): Promise<void> {
    const hyperparameters = { ...DEFAULT_LORA_HYPERPARAMETERS, ...spec.hyperparameters };
    const tokens = await tokenize(spec.baseModelPath, examples);
    await mkdir(job.jobDir, { recursive: true });
    const script = await shipTrainer();
    const model = await shipModel(spec.baseModelPath);
    const tokensPath = path.join(job.jobDir, 'tokens.jsonl');
    const specPath = path.join(job.jobDir, 'spec.json');
    await writeFile(tokensPath, tokens.map((t) => JSON.stringify(t)).join('\n') + '\n');
    const threads = Math.max(1, Math.floor(numCpus));
    await writeFile(
      specPath,
      JSON.stringify(
        {
          jobId: spec.jobId,
          baseModelPath: onCluster(model),
          tokensPath: onCluster(tokensPath),
          adapterPath: onCluster(job.adapter),
          peftAdapterDir: onCluster(job.peft),
          ...(spec.baseModelId ? { baseModelName: spec.baseModelId } : {}),
          device,
          threads,
          hyperparameters,
        },
        null,
        2,
      ),
    );
    const { existed } = await client.submit({
      entrypoint: `${python} ${quote(onCluster(script))} --spec ${quote(onCluster(specPath))}`,
      submission_id: submissionId,
      runtime_env: { env_vars: { OMP_NUM_THREADS: String(threads), PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' } },
      metadata: { 'verdict-bot.training_id': spec.jobId },
      entrypoint_num_cpus: numCpus,
      ...(numGpus > 0 ? { entrypoint_num_gpus: numGpus } : {}),
      ...(options.resources && Object.keys(options.resources).length > 0 ? { entrypoint_resources: options.resources } : {}),
    });
    logger?.info({ trainingId: spec.jobId, submissionId, existed }, existed ? 'the Ray job was already submitted' : 'Ray job submitted');
  }

  /** The spec's examples and the submission id they give (see {@link raySubmissionId}). */
  async function submissionOf(spec: TrainingSpec): Promise<{ ok: true; submissionId: string; examples: TrainingExample[] } | { ok: false; message: string }> {
    const read = await readExamples(spec.datasetPath);
    if (!read.ok) return read;
    const hyperparameters = { ...DEFAULT_LORA_HYPERPARAMETERS, ...spec.hyperparameters };
    const submissionId = raySubmissionId(spec.jobId, spec.baseModelId ?? path.basename(spec.baseModelPath), hyperparameters, read.examples);
    return { ok: true, submissionId, examples: read.examples };
  }

  async function launch(spec: TrainingSpec, onEvent: (event: TrainerEvent) => void): Promise<TrainerJob> {
    const read = await submissionOf(spec);
    if (!read.ok) return settled({ type: 'failed', message: read.message });
    const { submissionId } = read;
    const job = files(spec, submissionId);
    const existing = await client.get(submissionId);
    if (existing) {
      logger?.info({ trainingId: spec.jobId, submissionId, status: existing.status }, 'reattached to the Ray job');
    } else {
      try {
        await stat(spec.baseModelPath);
      } catch {
        return settled({ type: 'failed', message: `the base model file ${spec.baseModelPath} does not exist` });
      }
      try {
        await submit(spec, submissionId, job, read.examples);
      } catch (error) {
        if (error instanceof RayError) throw error;
        if (error instanceof ChatFormError) return settled({ type: 'failed', message: `the training cannot be rendered as its runs were asked: ${error.message}` });
        return settled({
          type: 'failed',
          message: `the Ray job's inputs could not be put on the shared storage ${sharedDir}: ${error instanceof Error ? error.message : String(error)}`,
        });
      }
    }
    return follow(spec, submissionId, job, onEvent);
  }

  function settled(event: Done): TrainerJob {
    return { done: Promise.resolve(event), cancel: async () => undefined };
  }

  function follow(spec: TrainingSpec, id: string, job: JobFiles, onEvent: (event: TrainerEvent) => void): TrainerJob {
    const stop = new AbortController();
    // Every call of a long follow ties its timeout to this signal (AbortSignal.any): not a leak.
    setMaxListeners(0, stop.signal);
    let stopReason: string | null = null;
    let logOffset = 0;
    let final: Done | null = null;
    let step = 0;

    /** Reads the log lines not read yet; the trainer's JSON lines are its events, the rest is Ray's and python's. */
    async function readLogs(): Promise<void> {
      const logs = await client.logs(id, stop.signal);
      if (logs.length < logOffset) logOffset = 0;
      const end = logs.lastIndexOf('\n') + 1;
      if (end <= logOffset) return;
      const lines = logs.slice(logOffset, end).split('\n');
      logOffset = end;
      for (const line of lines) {
        const text = line.trim();
        if (!text.startsWith('{')) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          continue;
        }
        const event = trainerEventSchema.safeParse(parsed);
        if (!event.success) continue;
        if (event.data.type === 'started') continue;
        if (event.data.type === 'progress') {
          step = event.data.step;
          onEvent(event.data);
        } else final = event.data;
      }
    }

    async function outcome(details: RayJobDetails): Promise<Done> {
      const last = final as Done | null;
      if (details.status === 'SUCCEEDED') {
        if (last?.type !== 'completed') {
          return { type: 'failed', message: `Ray says the job succeeded, but the trainer reported no adapter (job ${id})` };
        }
        if (!(await nonEmptyFile(job.adapter))) {
          return {
            type: 'failed',
            message: `the Ray job wrote its adapter to ${last.adapterPath} on the cluster, but ${job.adapter} is not on this machine: RAY_SHARED_DIR and RAY_CLUSTER_SHARED_DIR must be the same storage (job ${id})`,
          };
        }
        if (job.adapter !== spec.adapterPath) {
          // The PEFT folder before the GGUF, whose presence says the adapter is complete.
          if ((await stat(job.peft).catch(() => null))?.isDirectory()) await copyFolderInto(job.peft, peftAdapterDir(spec.adapterPath));
          await copyInto(job.adapter, spec.adapterPath);
        }
        return { type: 'completed', adapterPath: spec.adapterPath, metrics: last.metrics };
      }
      if (details.status === 'STOPPED') return { type: 'failed', message: `Ray says: the job was stopped (job ${id})` };
      if (last?.type === 'failed') return { type: 'failed', message: `${last.message} (Ray job ${id})` };
      return { type: 'failed', message: `Ray says: ${failureSummary(details)} (job ${id})` };
    }

    const done = (async (): Promise<Done> => {
      let wait = pollMs;
      let lastKey = '';
      for (;;) {
        if (stopReason) return { type: 'failed', message: stopReason };
        let details: RayJobDetails | null;
        try {
          details = await client.get(id, stop.signal);
        } catch (error) {
          if (stopReason) return { type: 'failed', message: stopReason };
          if (error instanceof RayError && error.status !== null) return { type: 'failed', message: `${error.message} (job ${id})` };
          logger?.warn({ err: error, submissionId: id }, 'Ray job status not read; polling on');
          details = { status: 'UNKNOWN' };
        }
        if (details === null) return { type: 'failed', message: `Ray says: Job ${id} does not exist (it was deleted from the cluster)` };
        if (details.status === 'RUNNING' || RAY_TERMINAL.has(details.status)) {
          try {
            await readLogs();
          } catch (error) {
            if (stopReason) return { type: 'failed', message: stopReason };
            logger?.warn({ err: error, submissionId: id }, 'Ray job logs not read');
            if (RAY_TERMINAL.has(details.status)) details = { status: 'UNKNOWN' };
          }
        }
        if (RAY_TERMINAL.has(details.status)) {
          const result = await outcome(details);
          logger?.info({ submissionId: id, status: details.status, outcome: result.type }, 'Ray job ended');
          return result;
        }
        const key = `${details.status}:${step}`;
        if (key !== lastKey && details.status === 'PENDING') {
          logger?.info({ submissionId: id, message: details.message }, 'Ray job pending');
        }
        wait = key === lastKey ? Math.min(maxPollMs, wait * 2) : pollMs;
        lastKey = key;
        await sleep(wait, stop.signal);
      }
    })();

    return {
      done,
      remoteId: id,
      async cancel() {
        if (stopReason) return;
        stopReason = `the training was cancelled; Ray job ${id} was stopped`;
        stop.abort();
        await client.stop(id).catch((error: unknown) => {
          logger?.error({ err: error, submissionId: id }, 'Ray job not stopped');
          throw error;
        });
      },
      async detach() {
        stopReason ??= `stopped following Ray job ${id}; it keeps running and is reattached on the next start`;
        stop.abort();
      },
    };
  }

  const host = (() => {
    try {
      return new URL(options.address).host;
    } catch {
      return options.address;
    }
  })();
  const reserved = numGpus > 0 ? `${numGpus} GPU${numGpus === 1 ? '' : 's'} a job` : `${numCpus} CPU${numCpus === 1 ? '' : 's'} a job`;

  return {
    label: `PyTorch LoRA as Ray jobs on ${host} (${reserved})`,
    /** The cluster runs the bundled trainer: the same architectures and tensor types. */
    checkBaseModel: bundledTrainerRefusal,
    /** Whether the cluster answers now (`GET /api/version`): a launch it would not take is refused before anything is charged. */
    async availability() {
      try {
        await client.version();
        return { ok: true };
      } catch (error) {
        if (!(error instanceof RayError)) throw error;
        if (error.status !== null) return { ok: false, reason: `the Ray cluster at RAY_ADDRESS=${options.address} refused: ${error.message}`, kind: 'settings' };
        return {
          ok: false,
          reason: `the Ray cluster at RAY_ADDRESS=${options.address} does not answer (${error.message}); nothing was launched or charged: try again when it is up, or check RAY_ADDRESS`,
          kind: 'unreachable',
        };
      }
    },
    /** The job of a training no process follows, looked up by its submission id as `start` does, stopped unless it has ended. */
    async stopOrphan(spec): Promise<OrphanStop> {
      const read = await submissionOf(spec);
      if (!read.ok) throw new Error(`the Ray job of training ${spec.jobId} cannot be named: ${read.message}`);
      const { submissionId } = read;
      const job = await client.get(submissionId);
      if (!job) return { outcome: 'not_found', remoteId: submissionId };
      if (RAY_TERMINAL.has(job.status)) return { outcome: 'already_finished', remoteId: submissionId, status: job.status };
      const stopped = await client.stop(submissionId);
      return { outcome: stopped ? 'stopped' : 'already_finished', remoteId: submissionId, status: job.status };
    },
    /** Starts or reattaches; Ray refusing the job (4xx) is a failed job in its words, not a crash to retry. */
    async start(spec, onEvent) {
      try {
        return await launch(spec, onEvent);
      } catch (error) {
        if (!(error instanceof RayError) || error.status === null) throw error;
        return settled({ type: 'failed', message: error.message });
      }
    },
  };
}
