// Supervises real LoRA trainings: one trainer job per training under a Postgres advisory lock, progress stored, reruns after a crash, completion once.
import { nonEmptyFile } from '../engines/shared-files.js';
import type pg from 'pg';
import type { SandboxContext, SandboxLogger, TrainingSupervisor } from './context.js';
import { adapterFile, claimTraining, completeTraining, failTraining, prepareTrainingSpec, unlockTraining } from './training-steps.js';
import { getTraining, activeTrainerTrainingIds, recordEngineStopped, unstoppedCancelledTrainingIds, updateActiveTraining } from './store/trainings.js';
import type { AdapterRegistration } from '../engines/lora-adapters.js';
import type { Trainer, TrainerEvent, TrainerJob } from '../engines/trainer.js';

export interface TrainingSupervisorOptions {
  trainer: Trainer;
  /** Folder the produced GGUF adapters are written to, one `<training id>.gguf` each. */
  adaptersDir: string;
  /** Folder of the per-training work folders (dataset JSONL, the trainer's own files). */
  workDir: string;
  threads: number;
  /** Absolute path of a base model's GGUF file, or null when this machine has none. */
  baseModelPath(modelId: string): string | null;
  /** Makes the adapter servable before any run can ask for it; must be idempotent. */
  registerAdapter(adapter: AdapterRegistration): Promise<void>;
  /** Trainings this process trains at once (they share the CPU). Default 1. */
  maxConcurrent?: number;
  /** Least interval between two progress writes of one training. Default 500 ms. */
  progressIntervalMs?: number;
  /** A training whose trainer was started this many times without finishing fails. Default 3. */
  maxAttempts?: number;
  /** First wait before asking the engine again to stop a cancelled training's job it could not stop; doubled up to `maxEngineStopRetryMs`. Default 5 s. */
  engineStopRetryMs?: number;
  /** Default 5 min. */
  maxEngineStopRetryMs?: number;
}

/** A training this process trains: its trainer job once started, whether it was cancelled, and the stop of its job once asked. */
interface Entry {
  job: TrainerJob | null;
  settled: Promise<void>;
  cancelled: boolean;
  stopped: Promise<void> | null;
}

/**
 * Real trainings are durable jobs: the training row is the job, keyed by the training id. A
 * process trains one only while it holds that training's session advisory lock on a dedicated
 * connection, so two platform processes on one Postgres never run two trainer jobs for it; a
 * killed process loses its connection, Postgres releases the lock, and the next tick of any
 * process reruns the training (an adapter already written is taken as is). Completion (the
 * fine-tuned model, the charge and the signed `training.completed` event) is one transaction that
 * happens at most once. A cancelled training (status `cancelled`, set by the API) is never
 * claimed again; the process training it cancels its trainer job (a local process is killed, a
 * remote job cancelled), and nothing it reports afterwards changes the training. A remote job that
 * no process followed when its training was cancelled (`engine_stopped_at` still null) is stopped
 * by the next process that takes the training's lock, once.
 */
export function createTrainingSupervisor(ctx: SandboxContext, options: TrainingSupervisorOptions): TrainingSupervisor {
  const logger: SandboxLogger = ctx.logger;
  const maxConcurrent = options.maxConcurrent ?? 1;
  const progressIntervalMs = options.progressIntervalMs ?? 500;
  const maxAttempts = options.maxAttempts ?? 3;
  const engineStopRetryMs = options.engineStopRetryMs ?? 5_000;
  const maxEngineStopRetryMs = Math.max(engineStopRetryMs, options.maxEngineStopRetryMs ?? 300_000);
  const running = new Map<string, Entry>();
  /** Cancelled trainings whose engine job could not be stopped yet: failures so far and when to ask again. */
  const stopRetries = new Map<string, { failures: number; nextAt: number }>();
  let stoppingOrphans: Promise<void> | null = null;
  let stopping = false;
  let ticking: Promise<void> | null = null;
  let restored = false;

  /** Serves every adapter trained here again (an embedded endpoint starts empty after a restart). */
  async function restoreAdapters(): Promise<void> {
    const result = await ctx.pool.query<{ id: string; adapter_path: string; base_model_id: string }>(
      `SELECT id, adapter_path, base_model_id FROM sandbox.models
        WHERE kind = 'fine_tuned' AND adapter_path IS NOT NULL ORDER BY created_at, id`,
    );
    for (const model of result.rows) {
      if (!(await nonEmptyFile(model.adapter_path))) {
        logger.warn({ modelId: model.id, adapterPath: model.adapter_path }, 'adapter file of a trained model is missing');
        continue;
      }
      await options.registerAdapter({ name: model.id, path: model.adapter_path, baseModelId: model.base_model_id });
    }
    restored = true;
  }

  function progressWriter(id: string, startedAt: number): (event: Extract<TrainerEvent, { type: 'progress' }>) => void {
    let lastWrite = 0;
    let writing: Promise<void> = Promise.resolve();
    return (event) => {
      const now = Date.now();
      const last = event.step >= event.totalSteps;
      if (!last && now - lastWrite < progressIntervalMs) return;
      lastWrite = now;
      const elapsed = now - startedAt;
      const remainingMs = event.step > 0 ? (elapsed / event.step) * Math.max(0, event.totalSteps - event.step) : null;
      writing = writing
        .then(() =>
          updateActiveTraining(ctx.pool, id, {
            step: event.step,
            total_steps: event.totalSteps,
            loss: Number.isFinite(event.loss) ? event.loss : null,
            progress_at: new Date(now),
            ...(remainingMs !== null ? { estimated_finish_at: new Date(now + remainingMs) } : {}),
          }).then(() => undefined),
        )
        .catch((error: unknown) => logger.warn({ err: error, trainingId: id }, 'training progress not stored'));
    };
  }

  async function markEngineStopped(id: string): Promise<void> {
    await recordEngineStopped(ctx.pool, id, ctx.now()).catch((error: unknown) =>
      logger.warn({ err: error, trainingId: id }, 'stop of the engine job not recorded; it is looked up again on a later tick'),
    );
  }

  /**
   * Cancels a cancelled training's trainer job once; resolves when the engine took the stop (then
   * recorded, so no other process stops it again) or refused it (left to {@link stopOrphans}).
   */
  function stopJob(id: string, entry: Entry, job: TrainerJob): Promise<void> {
    entry.stopped ??= job.cancel().then(
      async () => {
        logger.info({ trainingId: id, remoteId: job.remoteId }, 'training cancelled; its trainer job was stopped');
        await markEngineStopped(id);
      },
      (error: unknown) => logger.error({ err: error, trainingId: id, remoteId: job.remoteId }, 'trainer job not cancelled; stopped on a later tick'),
    );
    return entry.stopped;
  }

  /**
   * Stops the remote jobs of cancelled trainings that no process followed at the cancel (`engine_stopped_at`
   * still null), each under the training's lock: a lock held elsewhere means a process follows the job
   * and stops it itself. Engine errors are asked again later, with backoff.
   */
  async function stopOrphans(stopOrphan: NonNullable<Trainer['stopOrphan']>): Promise<void> {
    for (const id of await unstoppedCancelledTrainingIds(ctx.pool)) {
      if (stopping) return;
      if (running.has(id)) continue;
      const retry = stopRetries.get(id);
      if (retry && retry.nextAt > Date.now()) continue;
      const lock = await claimTraining(ctx, id);
      if (!lock) continue;
      try {
        const training = await getTraining(ctx.pool, id);
        if (!training || training.status !== 'cancelled' || training.engine_stopped_at !== null) {
          stopRetries.delete(id);
          continue;
        }
        try {
          const prepared = await prepareTrainingSpec(ctx, options, training, false);
          if (!prepared.ok) throw new Error(prepared.message);
          const { outcome, remoteId, status } = await stopOrphan.call(options.trainer, prepared.spec);
          stopRetries.delete(id);
          await markEngineStopped(id);
          const message =
            outcome === 'stopped'
              ? 'engine job of a cancelled training stopped'
              : outcome === 'not_found'
                ? 'no engine job found for a cancelled training; nothing to stop'
                : 'engine job of a cancelled training had already ended; nothing to stop';
          logger.info({ trainingId: id, remoteId, status }, message);
        } catch (error) {
          const failures = (retry?.failures ?? 0) + 1;
          const waitMs = Math.min(maxEngineStopRetryMs, engineStopRetryMs * 2 ** (failures - 1));
          stopRetries.set(id, { failures, nextAt: Date.now() + waitMs });
          logger.warn({ err: error, trainingId: id, failures, waitMs }, 'engine job of a cancelled training not stopped yet; asked again later');
        }
      } finally {
        await unlockTraining(lock, id, false);
      }
    }
  }

  async function train(id: string, lock: pg.PoolClient): Promise<void> {
    let lost = false;
    const onLost = () => {
      lost = true;
      const active = running.get(id);
      logger.error({ trainingId: id }, 'training lock connection lost; stopping its trainer job');
      void Promise.resolve((active?.job?.detach ?? active?.job?.cancel)?.call(active.job)).catch((error: unknown) =>
        logger.error({ err: error, trainingId: id }, 'trainer job not stopped'),
      );
    };
    lock.on('error', onLost);
    try {
      const training = await getTraining(ctx.pool, id);
      if (!training || (training.status !== 'queued' && training.status !== 'running')) return;
      const adapterPath = adapterFile(options, id);
      if (await nonEmptyFile(adapterPath)) {
        // Written (atomically) by an earlier attempt that died before completing the training.
        await completeTraining(ctx, options.registerAdapter, training, adapterPath, training.loss);
        return;
      }
      if (training.attempts >= maxAttempts) {
        await failTraining(ctx, id, `the trainer was started ${training.attempts} times without finishing; not trying again`);
        return;
      }
      const prepared = await prepareTrainingSpec(ctx, options, training, options.trainer.needsBaseModelFile !== false);
      if (!prepared.ok) {
        await failTraining(ctx, id, prepared.message);
        return;
      }

      const startedAt = ctx.now();
      const claimed = await updateActiveTraining(ctx.pool, id, {
        status: 'running',
        started_at: training.started_at ?? startedAt,
        attempts: training.attempts + 1,
        error_message: null,
      });
      if (!claimed) {
        logger.info({ trainingId: id }, 'training cancelled before its trainer started');
        return;
      }
      logger.info({ trainingId: id, attempt: training.attempts + 1, trainer: options.trainer.label }, 'training started');
      const onProgress = progressWriter(id, startedAt.getTime());
      const job = await options.trainer.start(prepared.spec, (event) => {
        if (event.type === 'progress') onProgress(event);
      });
      const entry = running.get(id);
      if (entry) entry.job = job;
      // A cancel that came while the trainer was starting: the tick saw no job to cancel yet.
      if (entry && !entry.cancelled && !(await isActive(id))) entry.cancelled = true;
      if (entry?.cancelled) await stopJob(id, entry, job);
      else if (stopping || lost) await (job.detach ?? job.cancel).call(job);
      const outcome = await job.done;
      if (entry?.cancelled) {
        // The stop is recorded (or known to have failed) before the lock goes: no other process stops it again.
        await stopJob(id, entry, job);
        logger.info({ trainingId: id, outcome: outcome.type }, 'training cancelled; its trainer job ended');
        return;
      }
      if (stopping || lost) {
        logger.info({ trainingId: id }, 'training handed back for a rerun');
        return;
      }
      if (outcome.type === 'failed') {
        await failTraining(ctx, id, `the trainer failed: ${outcome.message}`);
        return;
      }
      await completeTraining(ctx, options.registerAdapter, (await getTraining(ctx.pool, id)) ?? training, outcome.adapterPath, outcome.metrics.finalLoss, outcome.servedModel);
    } finally {
      lock.off('error', onLost);
      await unlockTraining(lock, id, lost);
    }
  }

  async function isActive(id: string): Promise<boolean> {
    const result = await ctx.pool.query<{ status: string }>('SELECT status FROM sandbox.trainings WHERE id = $1', [id]);
    const status = result.rows[0]?.status;
    return status === 'queued' || status === 'running';
  }

  function cancelJob(id: string): void {
    const entry = running.get(id);
    if (!entry || entry.cancelled) return;
    entry.cancelled = true;
    logger.info({ trainingId: id }, 'training cancelled; stopping its trainer job');
    if (entry.job) void stopJob(id, entry, entry.job);
  }

  /**
   * Cancels the trainer jobs of this process's trainings that were cancelled through any process.
   * Only `cancelled`: a training this process has just completed or failed is still in `running`
   * for a moment, and must not be taken for a cancelled one (that sent a stop to a finished Ray job).
   */
  async function stopCancelled(): Promise<void> {
    const ids = [...running].filter(([, entry]) => !entry.cancelled).map(([id]) => id);
    if (ids.length === 0) return;
    const result = await ctx.pool.query<{ id: string }>(
      `SELECT id FROM sandbox.trainings WHERE id = ANY($1::text[]) AND status = 'cancelled'`,
      [ids],
    );
    for (const row of result.rows) cancelJob(row.id);
  }

  async function claimDue(): Promise<void> {
    await stopCancelled();
    const stopOrphan = options.trainer.stopOrphan;
    if (stopOrphan && !stoppingOrphans) {
      stoppingOrphans = stopOrphans(stopOrphan)
        .catch((error: unknown) => logger.error({ err: error }, 'engine jobs of cancelled trainings not looked at; retried on a later tick'))
        .finally(() => {
          stoppingOrphans = null;
        });
    }
    if (!restored) {
      await restoreAdapters().catch((error: unknown) =>
        logger.warn({ err: error }, 'trained adapters not served yet; retried on the next tick'),
      );
    }
    for (const id of await activeTrainerTrainingIds(ctx.pool)) {
      if (stopping || running.size >= maxConcurrent) return;
      if (running.has(id)) continue;
      const lock = await claimTraining(ctx, id);
      if (!lock) continue;
      const entry: Entry = { job: null, settled: Promise.resolve(), cancelled: false, stopped: null };
      running.set(id, entry);
      entry.settled = train(id, lock)
        .catch((error: unknown) => logger.error({ err: error, trainingId: id }, 'training supervision failed; retried on a later tick'))
        .finally(() => running.delete(id));
    }
  }

  return {
    trainerLabel: options.trainer.label,
    tick() {
      if (stopping) return Promise.resolve();
      ticking ??= claimDue().finally(() => {
        ticking = null;
      });
      return ticking;
    },
    active: () => [...running.keys()],
    cancel: cancelJob,
    async idle() {
      await ticking;
      await stoppingOrphans;
      await Promise.all([...running.values()].map((entry) => entry.settled));
    },
    async stop() {
      stopping = true;
      await ticking;
      await stoppingOrphans;
      // A remote job is left running (detached) for the next start to reattach; a local one is stopped.
      await Promise.all(
        [...running.values()].map((entry) =>
          entry.job && !entry.cancelled ? (entry.job.detach ?? entry.job.cancel).call(entry.job) : undefined,
        ),
      );
      await Promise.all([...running.values()].map((entry) => entry.settled));
    },
  };
}
