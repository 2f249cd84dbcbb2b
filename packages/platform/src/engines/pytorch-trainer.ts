// The bundled trainer: LoRA with PyTorch on the CPU or a CUDA GPU (trainer/lora_train.py), supervised as a child process.
import type { Llama } from 'node-llama-cpp';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { loadCpuLlama } from './llama-cpu.js';
import { bundledTrainerRefusal } from './trainer-base-model.js';
import { DEFAULT_LORA_HYPERPARAMETERS, peftAdapterDir, type Trainer, type TrainerDevice, type TrainerEvent, type TrainerJob, type TrainingExample, type TrainingSpec } from './trainer.js';
import { ChatFormError, readExamples, type TokenizedExample, tokenizeExamples } from './trainer-examples.js';

/** The platform package's trainer/lora_train.py: two folders up from src/engines/, in the sources and in a build alike. */
export const TRAINER_SCRIPT = fileURLToPath(new URL('../../trainer/lora_train.py', import.meta.url));

export interface TrainerLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface PytorchTrainerOptions {
  /** A python that has torch and numpy (`TRAINER_PYTHON`); by default `python3`, then `/usr/bin/python3`. */
  python?: string;
  threads: number;
  logger?: TrainerLogger;
  /** node-llama-cpp instance to tokenize with; one is created on first use otherwise. */
  llama?: Llama;
  /** Time a cancelled trainer gets after SIGTERM before SIGKILL. */
  killGraceMs?: number;
  /** `TRAINER_DEVICE`. Default auto: CUDA when torch finds it, else the CPU. */
  device?: TrainerDevice;
}

type Done = Extract<TrainerEvent, { type: 'completed' | 'failed' }>;

const DEFAULT_PYTHONS = ['python3', '/usr/bin/python3'];
const INSTALL_HINT =
  'Install PyTorch for Python 3 (Debian/Ubuntu: `apt-get install python3-torch`; otherwise `pip install torch numpy`) ' +
  'or set TRAINER_PYTHON to a python that has it.';

/** One JSON line the bundled trainer prints on stdout. */
export const trainerEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('started'), device: z.string(), torch: z.string().optional() }),
  z.object({
    type: z.literal('progress'),
    step: z.number().int(),
    totalSteps: z.number().int(),
    epoch: z.number().int(),
    loss: z.number(),
  }),
  z.object({
    type: z.literal('completed'),
    adapterPath: z.string(),
    metrics: z.object({ finalLoss: z.number(), steps: z.number().int(), seconds: z.number() }),
  }),
  z.object({ type: z.literal('failed'), message: z.string() }),
]);


/** How much lower a training runs than the process that starts it (nice levels, capped at 19), as `nice -n 10` would. */
export const TRAINER_NICENESS = 10;

/**
 * Lowers a just-started trainer to {@link TRAINER_NICENESS} below this process, before torch starts
 * its threads (they inherit it), so a training gives the CPU way to turns and acks. An ordinary nice
 * value: no privilege needed; where it is refused the training runs at this process's priority.
 */
function lowerPriority(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    os.setPriority(pid, Math.min(19, os.getPriority() + TRAINER_NICENESS));
  } catch {
    // The process ended already (its exit is reported), or not permitted.
  }
}


/** Why `TRAINER_DEVICE=cuda` cannot be honoured by a python whose torch finds no CUDA. */
export function cudaMissingReason(python: string, torchVersion: string): string {
  return `TRAINER_DEVICE=cuda, but the torch of ${python} (${torchVersion}) finds no CUDA GPU (a CPU-only build, or no GPU or driver on this machine); set TRAINER_DEVICE=cpu or auto, or TRAINER_PYTHON to a python whose torch has CUDA`;
}

/** The BLAS torch's matrix products run on, as the trainer's `--check` finds it. */
export interface TorchBlas {
  /** `OpenBLAS`, `MKL`, `BLIS`, `ATLAS`, `reference` (Netlib's, unoptimized), or `unknown`. */
  name: string;
  library: string | null;
  detail: string;
}

const torchBlasSchema = z.object({ name: z.string(), library: z.string().nullable(), detail: z.string() });

/**
 * The words a training report carries when torch computes on the reference BLAS: on the CPU it
 * trains several times slower than with an optimized one (docs/performance.md), and the fix is one
 * package.
 */
export function referenceBlasWarning(blas: TorchBlas): string {
  return (
    `slow: torch uses the reference BLAS (${blas.library ?? 'libblas.so.3'}), several times slower on the CPU than OpenBLAS; ` +
    'install libopenblas0-pthread (Debian/Ubuntu: `apt-get install libopenblas0-pthread`, which becomes the BLAS by itself)'
  );
}

async function probePython(python: string): Promise<{ ok: true; torch: string; cuda: boolean; blas: TorchBlas | null } | { ok: false; why: string }> {
  return new Promise((resolve) => {
    let out = '';
    let err = '';
    const child = spawn(python, [TRAINER_SCRIPT, '--check'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ ok: false, why: error.code === 'ENOENT' ? `${python} was not found` : `${python} could not start (${error.message})` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0 && /"torch"/.test(out)) {
        try {
          const found = JSON.parse(out.trim().split('\n').at(-1)!) as { torch?: unknown; cuda?: unknown; blas?: unknown };
          const blas = torchBlasSchema.safeParse(found.blas);
          return resolve({ ok: true, torch: String(found.torch), cuda: found.cuda === true, blas: blas.success ? blas.data : null });
        } catch {
          return resolve({ ok: false, why: `${python} printed something else than the torch check's answer` });
        }
      }
      const missing = /No module named '([^']+)'/.exec(err)?.[1];
      resolve({
        ok: false,
        why: missing ? `${python} has no ${missing} module` : `${python} failed the torch check (exit code ${code ?? 'none'})`,
      });
    });
  });
}

function jobFailed(message: string): TrainerJob {
  const event: Done = { type: 'failed', message };
  return { done: Promise.resolve(event), cancel: async () => undefined };
}


/**
 * Creates the bundled PyTorch LoRA trainer (trainer/lora_train.py). `onEvent` receives progress
 * events; the outcome (`completed` only once the adapter file exists, or `failed`) comes through `done`.
 * Bad input (no torch, unreadable dataset, missing model) resolves `done` with `failed` at once.
 */
export function createPytorchTrainer(opts: PytorchTrainerOptions): Trainer {
  const candidates = opts.python ? [opts.python] : DEFAULT_PYTHONS;
  const logger = opts.logger;
  const killGraceMs = opts.killGraceMs ?? 5_000;
  const device = opts.device ?? 'auto';
  let found: { python: string; torch: string; cuda: boolean; blas: TorchBlas | null } | null = null;
  let llamaPromise: Promise<Llama> | null = opts.llama ? Promise.resolve(opts.llama) : null;

  async function findPython(): Promise<{ ok: true; python: string } | { ok: false; reason: string; kind?: 'settings' }> {
    if (found) return deviceChecked(found);
    const reasons: string[] = [];
    for (const python of candidates) {
      const probe = await probePython(python);
      if (probe.ok) {
        found = { python, torch: probe.torch, cuda: probe.cuda, blas: probe.blas };
        if (probe.blas?.name === 'reference' && !onCuda()) logger?.warn({ python, blas: probe.blas }, referenceBlasWarning(probe.blas));
        return deviceChecked(found);
      }
      reasons.push(probe.why);
    }
    return {
      ok: false,
      reason: `Training needs Python 3 with PyTorch and numpy, and none was found (${reasons.join('; ')}). ${INSTALL_HINT}`,
    };
  }

  function deviceChecked(python: { python: string; torch: string; cuda: boolean }): { ok: true; python: string } | { ok: false; reason: string; kind: 'settings' } {
    if (device === 'cuda' && !python.cuda) return { ok: false, reason: cudaMissingReason(python.python, python.torch), kind: 'settings' };
    return { ok: true, python: python.python };
  }

  async function tokenize(spec: TrainingSpec, examples: TrainingExample[]): Promise<TokenizedExample[]> {
    llamaPromise ??= loadCpuLlama();
    const llama = await llamaPromise;
    const model = await llama.loadModel({ modelPath: spec.baseModelPath, vocabOnly: true });
    try {
      return tokenizeExamples(model, examples);
    } finally {
      await model.dispose();
    }
  }

  function onCuda(): boolean {
    return device === 'cuda' || (device === 'auto' && found?.cuda === true);
  }

  return {
    /**
     * The device in use once the python was probed (`auto` is the CPU until then); on the CPU with
     * the reference BLAS, the warning of {@link referenceBlasWarning}: every training report names it.
     */
    get label() {
      if (onCuda()) return 'PyTorch LoRA, CUDA';
      const cpu = `PyTorch LoRA, CPU, ${opts.threads} thread${opts.threads === 1 ? '' : 's'}`;
      return found?.blas?.name === 'reference' ? `${cpu}; ${referenceBlasWarning(found.blas)}` : cpu;
    },

    checkBaseModel: bundledTrainerRefusal,

    async availability() {
      const result = await findPython();
      if (result.ok) return { ok: true };
      return { ok: false, reason: result.reason, ...(result.kind ? { kind: result.kind } : {}) };
    },

    async start(spec, onEvent) {
      const python = await findPython();
      if (!python.ok) return jobFailed(python.reason);
      const read = await readExamples(spec.datasetPath);
      if (!read.ok) return jobFailed(read.message);
      try {
        await stat(spec.baseModelPath);
      } catch {
        return jobFailed(`the base model file ${spec.baseModelPath} does not exist`);
      }
      const problem = await bundledTrainerRefusal(spec.baseModelPath);
      if (problem) return jobFailed(problem);
      const tokensPath = path.join(spec.workDir, 'tokens.jsonl');
      const specPath = path.join(spec.workDir, 'spec.json');
      try {
        await mkdir(spec.workDir, { recursive: true });
        await writeFile(
          specPath,
          JSON.stringify(
            {
              jobId: spec.jobId,
              baseModelPath: spec.baseModelPath,
              tokensPath,
              awaitTokens: true,
              adapterPath: spec.adapterPath,
              peftAdapterDir: peftAdapterDir(spec.adapterPath),
              ...(spec.baseModelId ? { baseModelName: spec.baseModelId } : {}),
              device,
              threads: spec.threads || opts.threads,
              hyperparameters: { ...DEFAULT_LORA_HYPERPARAMETERS, ...spec.hyperparameters },
            },
            null,
            2,
          ),
        );
      } catch (error) {
        return jobFailed(`the trainer's work folder ${spec.workDir} could not be written: ${(error as Error).message}`);
      }
      // Tokenized while the trainer loads torch and the model (seconds each on a real model): it
      // reads the tokens once told they are written. A failure here is the training's reason.
      const tokensWritten = (async (): Promise<string | null> => {
        let tokenized: TokenizedExample[];
        try {
          tokenized = await tokenize(spec, read.examples);
        } catch (error) {
          if (error instanceof ChatFormError) return `the training cannot be rendered as its runs were asked: ${error.message}`;
          return `the base model could not be read for tokenizing: ${(error as Error).message}`;
        }
        try {
          await writeFile(tokensPath, tokenized.map((example) => JSON.stringify(example)).join('\n') + '\n');
          return null;
        } catch (error) {
          return `the trainer's work folder ${spec.workDir} could not be written: ${(error as Error).message}`;
        }
      })();
      return supervise(python.python, specPath, spec, onEvent, tokensWritten);
    },
  };

  // No `stopOrphan` here: the subprocess dies with the platform process that started it
  // (lora_train.py's watch_parent: PR_SET_PDEATHSIG, and a check of its parent every 0.5 s), so a
  // training no process follows has no job left running.
  function supervise(python: string, specPath: string, spec: TrainingSpec, onEvent: (event: TrainerEvent) => void, tokensWritten: Promise<string | null>): TrainerJob {
    const child: ChildProcess = spawn(python, [TRAINER_SCRIPT, '--spec', specPath], {
      cwd: spec.workDir,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1', OMP_NUM_THREADS: String(spec.threads || opts.threads) },
    });
    lowerPriority(child.pid);
    logger?.info({ jobId: spec.jobId, pid: child.pid, python }, 'trainer started');
    let last: Done | null = null;
    let cancelled = false;
    let notTokenized: string | null = null;
    // A trainer that exited first closed its end: nothing to tell it then.
    child.stdin!.on('error', () => undefined);
    void tokensWritten.then((failure) => {
      notTokenized = failure;
      if (failure === null) child.stdin!.end('ready\n');
      // Stopped now rather than once its model is loaded; `done` reports the failure.
      else child.kill('SIGKILL');
    });
    const stderrTail: string[] = [];

    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.trim() === '') return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        logger?.warn({ jobId: spec.jobId, line }, 'trainer printed a line that is not JSON');
        return;
      }
      const event = trainerEventSchema.safeParse(parsed);
      if (!event.success) {
        logger?.warn({ jobId: spec.jobId, line }, 'trainer printed an unknown event');
        return;
      }
      if (event.data.type === 'started') logger?.info({ jobId: spec.jobId, device: event.data.device, torch: event.data.torch }, 'trainer computing');
      else if (event.data.type === 'progress') onEvent(event.data);
      else last = event.data;
    });
    createInterface({ input: child.stderr! }).on('line', (line) => {
      stderrTail.push(line);
      if (stderrTail.length > 20) stderrTail.shift();
      logger?.warn({ jobId: spec.jobId, stderr: line }, 'trainer stderr');
    });

    const done = new Promise<Done>((resolve) => {
      child.on('error', (error) => {
        resolve({ type: 'failed', message: `the trainer could not start: ${error.message}` });
      });
      child.on('close', (code, signal) => {
        void (async (): Promise<Done> => {
          if (cancelled) return { type: 'failed', message: 'training cancelled' };
          if (notTokenized !== null) return { type: 'failed', message: notTokenized };
          const final = last as Done | null;
          if (final?.type === 'completed' && code === 0) {
            try {
              await stat(final.adapterPath);
              return final;
            } catch {
              return { type: 'failed', message: `the trainer reported an adapter at ${final.adapterPath} but wrote none` };
            }
          }
          if (final?.type === 'failed') return final;
          const tail = stderrTail.slice(-3).join(' | ');
          return {
            type: 'failed',
            message: `the trainer exited ${signal ? `on signal ${signal}` : `with code ${code}`} before finishing${tail ? `: ${tail}` : ''}`,
          };
        })().then((event) => {
          logger?.info({ jobId: spec.jobId, code, signal, outcome: event.type }, 'trainer exited');
          resolve(event);
        });
      });
    });

    return {
      done,
      async cancel() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        cancelled = true;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), killGraceMs);
        await done;
        clearTimeout(timer);
      },
    };
  }
}
