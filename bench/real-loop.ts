// Message to verdict on a model of real size (Qwen2.5-0.5B's shapes, random weights) with the embedded llama.cpp engine and the bundled trainer:
// wall time against the engines' own time, and the baseline run's inference throughput against node-llama-cpp driven directly.
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { getLlama, LlamaCompletion, LlamaLogLevel } from 'node-llama-cpp';
import { normalizeText } from '@verdict/platform/benchmarks/scorers';
import { pythonWithTorch } from '../test/kit/engines.js';
import { loopScript, SEED_MESSAGE } from '../test/kit/loop-script.js';
import { shapedModel } from '../test/kit/shaped-model.js';
import { query, runLoops } from './loops-kit.js';
import { envNumber, fmt, isMain, report } from './stats.js';

const QUESTIONS = envNumber('BENCH_REAL_QUESTIONS', 40);
/** Questions whose expected answer the model does not give: the training set is built from them. */
const FAILED = envNumber('BENCH_REAL_FAILED', 4);
/** Every question's generation budget (its `max_tokens`); the answers are short enough not to raise it. */
const MAX_TOKENS = envNumber('BENCH_REAL_MAX_TOKENS', 16);
const THREADS = envNumber('BENCH_REAL_THREADS', 2);
const SEQUENCES = envNumber('BENCH_REAL_SEQUENCES', 4);
const AUGMENTATION = envNumber('BENCH_REAL_AUGMENTATION', 1);
const EPOCHS = envNumber('BENCH_REAL_EPOCHS', 1);
/** The embedded server's tokens per sequence (its default for a model trained on more). */
const CONTEXT_SIZE = 4096;
const MODEL_ID = 'qwen2.5-0.5b-shapes';
const BENCHMARK_ID = '540';

const NAMES = ['Lily', 'Tom', 'Ben', 'Sue', 'Max', 'Mia', 'Sam', 'Anna', 'Tim', 'Lucy'];
const PLACES = ['the park', 'the sea', 'the forest', 'school', 'the garden', 'the shop', 'the farm'];

interface Request {
  prompt: string;
  maxTokens: number;
}

interface DirectPass {
  outputs: string[];
  completionTokens: number;
  ms: number;
}

/**
 * The requests straight through node-llama-cpp, as the embedded server serves them: one model, one
 * context of SEQUENCES sequences with THREADS threads, a sequence per request, greedy. The model's load
 * and the context's creation are timed too: the server does both on a run's first question.
 */
async function directPass(modelPath: string, requests: readonly Request[]): Promise<DirectPass> {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: THREADS });
  const started = performance.now();
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ contextSize: CONTEXT_SIZE, sequences: SEQUENCES, threads: THREADS });
  const outputs: string[] = [];
  let completionTokens = 0;
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: SEQUENCES }, async () => {
        while (next < requests.length) {
          const index = next++;
          const request = requests[index]!;
          const sequence = context.getSequence();
          try {
            const completion = new LlamaCompletion({ contextSequence: sequence });
            outputs[index] = await completion.generateCompletion(request.prompt, {
              maxTokens: request.maxTokens,
              temperature: 0,
              seed: 0,
              onToken: (tokens) => {
                completionTokens += tokens.length;
              },
            });
          } finally {
            await sequence.dispose();
          }
        }
      }),
    );
    return { outputs, completionTokens, ms: performance.now() - started };
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

/**
 * A word of `output` as the `contains` scorer reads it, or null when it has none. At most four
 * letters, so at most five tokens: its generation budget stays under MAX_TOKENS (16), and the run
 * sends exactly the requests of the direct pass.
 */
function wordOf(output: string): string | null {
  const words = normalizeText(output).split(' ').filter((w) => /^[a-z]{2,4}$/.test(w));
  return words.sort((a, b) => b.length - a.length)[0] ?? null;
}

interface LogLine {
  level?: number;
  msg?: string;
  time?: string | number;
  model?: string;
  engineMs?: number;
  component?: string;
  tool?: string;
}

const epochOf = (line: LogLine) => (typeof line.time === 'number' ? line.time : Date.parse(String(line.time)));

/** Milliseconds covered by the union of the intervals. */
function busyMs(intervals: ReadonlyArray<readonly [number, number]>): number {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [from, to] of sorted) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return total;
}

export async function main(): Promise<void> {
  const python = pythonWithTorch();
  if (!python) throw new Error('real-loop needs a python with torch and numpy (TRAINER_PYTHON, python3 or /usr/bin/python3)');
  const root = await mkdtemp(path.join(os.tmpdir(), 'verdict-bench-real-'));
  try {
    const writing = performance.now();
    const modelFile = await shapedModel('qwen2.5-0.5b');
    console.log(`real-loop: model ${modelFile} (qwen2, Qwen2.5-0.5B's shapes, f16, random weights; ${fmt((performance.now() - writing) / 1000, 0)} s to find or write)`);
    console.log(
      `  ${QUESTIONS} questions (${FAILED} answered wrong by design), ${MAX_TOKENS} tokens each, ${THREADS} threads, ${SEQUENCES} sequences; ` +
        `training set x${AUGMENTATION}, ${EPOCHS} epoch(s); trainer python ${python}`,
    );
    const modelsDir = path.join(root, 'models');
    const benchmarksDir = path.join(root, 'benchmarks');
    await mkdir(modelsDir);
    await mkdir(benchmarksDir);
    await symlink(modelFile, path.join(modelsDir, `${MODEL_ID}.gguf`));

    // The expected answers: a word of the model's own greedy answer (right), or a word it does not say (wrong).
    const questions = Array.from({ length: QUESTIONS }, (_, i) => `${NAMES[i % NAMES.length]} went to ${PLACES[i % PLACES.length]} on day ${i + 1} and`);
    const requests = questions.map((prompt) => ({ prompt, maxTokens: MAX_TOKENS }));
    const before = await directPass(modelFile, requests);
    console.log(`  node-llama-cpp directly: ${before.completionTokens} tokens in ${fmt(before.ms / 1000, 1)} s; now the loop (message -> verdict)`);
    const items = questions.map((question, i) => {
      const word = i < QUESTIONS - FAILED ? wordOf(before.outputs[i]!) : null;
      return { id: `q${String(i + 1).padStart(2, '0')}`, question, answer: word ?? 'zebra', category: i % 2 === 0 ? 'even' : 'odd', scorer: 'contains', max_tokens: MAX_TOKENS };
    });
    const right = items.filter((item, i) => normalizeText(before.outputs[i]!).includes(normalizeText(item.answer))).length;
    await writeFile(path.join(benchmarksDir, `${BENCHMARK_ID}.jsonl`), items.map((item) => JSON.stringify(item)).join('\n') + '\n');

    const seed = SEED_MESSAGE.replaceAll('benchmark 104', `benchmark ${BENCHMARK_ID}`).replace('Qwen2.5-0.5B-Instruct', MODEL_ID);
    const run = await runLoops(1, {
      script: loopScript({ augmentation: AUGMENTATION, epochs: EPOCHS }),
      seedMessage: seed,
      checkEveryMs: 100,
      timeoutMs: envNumber('BENCH_REAL_TIMEOUT_S', 3600) * 1000,
      env: {
        MODELS_DIR: modelsDir,
        BENCHMARKS_DIR: benchmarksDir,
        ENGINE_THREADS: String(THREADS),
        INFERENCE_CONCURRENCY: String(SEQUENCES),
        TRAINER_PYTHON: python,
        // A request waits for a free sequence and then generates: on a busy CPU that passed the default 120 s.
        INFERENCE_TIMEOUT_MS: String(envNumber('BENCH_REAL_REQUEST_TIMEOUT_S', 1800) * 1000),
        // Slack's own pace, not the harness's faster one: posting is part of what the loop costs.
        SLACK_PACE_SCALE: '1',
        RECONCILE_OVERDUE_SECONDS: '3600',
        // The engine's per-request timing is a debug line.
        LOG_LEVEL: 'debug',
      },
    });
    try {
      if (run.finished !== 1) throw new Error(`no verdict within the timeout (${fmt(run.wallMs / 1000, 0)} s)`);
      const verdictAt = run.startedAtEpochMs + run.wallMs;
      const lines = (await readFile(run.logFile, 'utf8'))
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as LogLine);
      const served = lines.filter((l) => l.msg === 'inference request served');
      const trainerStart = lines.find((l) => l.msg === 'trainer started');
      const trainerExit = lines.find((l) => l.msg === 'trainer exited');
      if (!trainerStart || !trainerExit) throw new Error('the engines logged no timing (LOG_LEVEL=debug lines missing)');
      // A run's requests by when they were served, not by model name: the trained run also asks the
      // base model (its tokenizer) once before its questions.
      const intervals = (when: (at: number) => boolean) =>
        served.filter((l) => when(epochOf(l))).map((l) => [epochOf(l) - l.engineMs!, epochOf(l)] as const);
      const baseRequests = intervals((at) => at <= epochOf(trainerStart));
      const trainedRequests = intervals((at) => at >= epochOf(trainerExit));
      if (baseRequests.length === 0 || trainedRequests.length === 0) throw new Error('the engines logged no timing (LOG_LEVEL=debug lines missing)');
      const baseBusy = busyMs(baseRequests);
      const trainedBusy = busyMs(trainedRequests);
      const trainerMs = epochOf(trainerExit) - epochOf(trainerStart);
      const engineMs = baseBusy + trainedBusy + trainerMs;
      const first = (xs: ReadonlyArray<readonly [number, number]>) => Math.min(...xs.map((x) => x[0]));
      const last = (xs: ReadonlyArray<readonly [number, number]>) => Math.max(...xs.map((x) => x[1]));

      const runs = await query<{ id: string; model_id: string; score: number; started_at: Date; finished_at: Date; completion_tokens: number }>(
        run.databaseUrl,
        'select id, model_id, score, started_at, finished_at, completion_tokens from sandbox.runs order by seq',
      );
      const [baseline, trained] = runs;
      if (!baseline || !trained) throw new Error(`expected two runs, found ${runs.length}`);
      const asked = await query<{ prompt: string; max_tokens: number }>(
        run.databaseUrl,
        'select prompt, max_tokens from sandbox.run_answers where run_id = $1 order by position',
        [baseline.id],
      );
      const [dataset] = await query<{ examples: unknown[] }>(run.databaseUrl, 'select examples from sandbox.datasets');

      // The direct pass sent the run's requests when they match; else (or with BENCH_REAL_DIRECT_AFTER=1)
      // the run's own requests go straight through node-llama-cpp again, now that the loop is over.
      const same = asked.length === requests.length && asked.every((r, i) => r.prompt === requests[i]!.prompt && r.max_tokens === requests[i]!.maxTokens);
      const after = !same || process.env.BENCH_REAL_DIRECT_AFTER === '1' ? await directPass(modelFile, asked.map((r) => ({ prompt: r.prompt, maxTokens: r.max_tokens }))) : undefined;
      const runMs = baseline.finished_at.getTime() - baseline.started_at.getTime();
      const runTps = (baseline.completion_tokens / runMs) * 1000;
      const passes = same ? [before, ...(after ? [after] : [])] : [after!];
      const directTps = passes.map((d) => (d.completionTokens / d.ms) * 1000);
      const directMean = directTps.reduce((a, b) => a + b, 0) / directTps.length;
      const s = (ms: number) => `${fmt(ms / 1000, 1)} s`;

      report('verdict', `${right}/${QUESTIONS} right before (by design ${QUESTIONS - FAILED}); scores ${fmt(baseline.score * 100, 1)}% -> ${fmt(trained.score * 100, 1)}%; ${dataset?.examples.length ?? 0} training examples`);
      report('wall time, message -> verdict', s(run.wallMs));
      report('engines: baseline run (llama.cpp busy)', `${s(baseBusy)} (${baseRequests.length} requests)`);
      report('engines: trainer process (spawn -> exit)', s(trainerMs));
      report('engines: trained run (llama.cpp busy)', `${s(trainedBusy)} (${trainedRequests.length} requests)`);
      report('engines together', s(engineMs));
      report('ratio wall / engines', `${fmt(run.wallMs / engineMs, 3)} (target <= 1.1: ${run.wallMs / engineMs <= 1.1 ? 'met' : 'MISSED'})`);
      report('ours: message -> first baseline request', s(first(baseRequests) - run.startedAtEpochMs));
      report('ours: inside the baseline run (span - busy)', s(last(baseRequests) - first(baseRequests) - baseBusy));
      report('ours: last baseline answer -> trainer spawn', s(epochOf(trainerStart) - last(baseRequests)));
      report('ours: trainer exit -> first trained request', s(first(trainedRequests) - epochOf(trainerExit)));
      report('ours: inside the trained run (span - busy)', s(last(trainedRequests) - first(trainedRequests) - trainedBusy));
      report('ours: last trained answer -> verdict seen', s(verdictAt - last(trainedRequests)));
      report(
        'baseline run throughput (platform)',
        `${fmt(runTps, 2)} generated tokens/s (${baseline.completion_tokens} tokens, ${asked.length} questions in ${s(runMs)}, run start -> finish)`,
      );
      report(
        `node-llama-cpp directly, ${same ? (after ? 'before / after the loop' : 'before the loop, the same requests') : "after the loop, the run's requests"}`,
        `${directTps.map((t) => fmt(t, 2)).join(' / ')} tokens/s (${passes.map((d) => `${d.completionTokens} tokens in ${s(d.ms)}`).join(' / ')})`,
      );
      if (process.env.BENCH_REAL_TIMELINE === '1') {
        // What the bot and the platform logged at info and above, in seconds from the mention: where "ours" went.
        console.log('  timeline (s from the mention):');
        for (const l of lines) {
          if ((l.level ?? 0) < 30 || l.component === 'graphile-worker' || l.component === 'slack-web-api') continue;
          console.log(`    ${fmt((epochOf(l) - run.startedAtEpochMs) / 1000, 2).padStart(8)}  ${l.component ?? ''} ${l.msg ?? ''}${l.tool ? ` ${l.tool}` : ''}`);
        }
      }
      report('ratio platform / direct', `${fmt(runTps / directMean, 3)} (target >= 0.9: ${runTps / directMean >= 0.9 ? 'met' : 'MISSED'})`);
    } finally {
      await run.stop();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
