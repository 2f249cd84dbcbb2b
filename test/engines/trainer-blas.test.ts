// Which BLAS torch computes on: the trainer's check names the library torch really loads, and a training on the reference BLAS says in its report that it is slow and how to fix it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkItem } from '@verdict/platform/benchmarks/index';
import { startLlamaServer, type LlamaServer } from '@verdict/platform/engines/llama-server';
import { TRAINER_SCRIPT, createPytorchTrainer, referenceBlasWarning, type TorchBlas } from '@verdict/platform/engines/pytorch-trainer';
import { pythonWithTorch, STORIES_MODEL_FILE } from '../kit/engines.js';
import { startTestSandbox, waitForRun, waitForTraining, type TestSandbox } from '../platform/helpers.js';

const execFileAsync = promisify(execFile);
const PYTHON = pythonWithTorch();
if (!PYTHON) console.warn('[trainer-blas] SKIPPED every test: no python with torch and numpy here (apt-get install python3-torch)');

/**
 * A folder holding the reference BLAS (Debian's libblas3, which python3-torch pulls in first):
 * REFERENCE_BLAS_DIR, else Debian's own path. With one, the warning is tested on a torch that really
 * computes on it (LD_LIBRARY_PATH puts it before the system's BLAS); without, on a python whose
 * check answers what the real check answers there.
 */
const REFERENCE_BLAS_DIR = [process.env.REFERENCE_BLAS_DIR, `/usr/lib/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu/blas`].find(
  (dir): dir is string => !!dir && fs.existsSync(path.join(dir, 'libblas.so.3')),
);

const FAILING: BenchmarkItem[] = ['zebra', 'volcano'].map((word, i) => ({ id: `f${i + 1}`, question: 'The little dog found a', answer: word, scorer: 'contains', max_tokens: 4 }));

let dir: string;
let server: LlamaServer;
let sandbox: TestSandbox | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trainer-blas-'));
  fs.mkdirSync(path.join(dir, 'models'));
  fs.copyFileSync(STORIES_MODEL_FILE, path.join(dir, 'models', 'stories260K.gguf'));
  server = await startLlamaServer({ modelsDir: path.join(dir, 'models'), threads: 1, parallel: 1 });
});

afterAll(async () => {
  await sandbox?.sandbox.stop();
  await server?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function check(python: string): Promise<{ blas: TorchBlas }> {
  const { stdout } = await execFileAsync(python, [TRAINER_SCRIPT, '--check']);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { blas: TorchBlas };
}

describe.skipIf(!PYTHON)("the trainer's BLAS", () => {
  it('--check names the BLAS library a torch process really maps when it multiplies matrices', async () => {
    const { blas } = await check(PYTHON!);
    expect(blas.name).not.toBe('unknown');
    const { stdout } = await execFileAsync(PYTHON!, [
      '-c',
      'import os, torch\n(torch.ones(64, 64) @ torch.ones(64, 64)).sum()\n' +
        "print('\\n'.join(sorted({os.path.realpath(l.split()[-1]) for l in open('/proc/self/maps') if l.split()[-1].startswith('/')})))",
    ]);
    if (blas.library !== null) expect(stdout.split('\n')).toContain(blas.library);
    console.info(`[trainer-blas] ${PYTHON}: torch computes on ${blas.name} (${blas.library ?? 'built in'}; ${blas.detail})`);
  });

  it("a training on the reference BLAS says in its report that it is slow, and which package fixes it; it still trains", async () => {
    const python = path.join(dir, 'python-reference-blas');
    if (REFERENCE_BLAS_DIR) {
      fs.writeFileSync(python, `#!/bin/sh\nLD_LIBRARY_PATH=${REFERENCE_BLAS_DIR} exec ${PYTHON} "$@"\n`);
    } else {
      // No reference BLAS on this machine: the check's answer on one that has it, then the real python for the training.
      const answer = { torch: '1.13.0', numpy: '1.24.2', cuda: false, blas: { name: 'reference', library: '/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0', detail: 'the reference BLAS: unoptimized, one thread' } };
      fs.writeFileSync(python, `#!/bin/sh\nif [ "$2" = --check ]; then echo '${JSON.stringify(answer)}'; exit 0; fi\nexec ${PYTHON} "$@"\n`);
      console.warn('[trainer-blas] no reference BLAS here (install libblas3 or set REFERENCE_BLAS_DIR): its check answer is given by a fake python; the training runs on the real one');
    }
    fs.chmodSync(python, 0o755);
    const { blas } = await check(python);
    expect(blas.name).toBe('reference');
    const trainer = createPytorchTrainer({ python, threads: 1 });
    expect(await trainer.availability()).toEqual({ ok: true });
    expect(trainer.label).toBe(`PyTorch LoRA, CPU, 1 thread; ${referenceBlasWarning(blas)}`);
    expect(trainer.label).toMatch(/slow: torch uses the reference BLAS .* install libopenblas0-pthread/);
    // The same python on its own BLAS: no warning.
    const plain = createPytorchTrainer({ python: PYTHON!, threads: 1 });
    expect(await plain.availability()).toEqual({ ok: true });
    expect(plain.label).toBe('PyTorch LoRA, CPU, 1 thread');

    sandbox = await startTestSandbox({
      inference: { url: server.url, concurrency: 1, pollIntervalMs: 50, promptStyle: 'completion', benchmarkItems: async (id) => (id === 'failing' ? FAILING : null) },
      training: {
        trainer,
        adaptersDir: path.join(dir, 'adapters'),
        workDir: path.join(dir, 'training'),
        threads: 1,
        baseModelPath: (id: string) => (id === 'stories260K' ? path.join(dir, 'models', 'stories260K.gguf') : null),
      },
    });
    const { platform } = sandbox;
    const run = await waitForRun(platform, (await platform.launchRun({ benchmarkId: 'failing', modelId: 'stories260K' }, 'run')).id, 120_000);
    const dataset = await platform.buildDataset({ runId: run.id, augmentation: 2 }, 'dataset');
    const launched = await platform.launchTraining({ datasetId: dataset.id, baseModelId: 'stories260K', epochs: 1 }, 'training');
    // What the user reads about the training (the launch report names its engine) carries the warning.
    expect(launched.engine).toBe(trainer.label);
    expect(await waitForTraining(platform, launched.id, 240_000)).toMatchObject({ status: 'completed', engine: trainer.label });
  }, 300_000);
});
