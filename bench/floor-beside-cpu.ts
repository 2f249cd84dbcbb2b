// Diagnostic: the floor of the ack bench (bare Bolt + one durable INSERT per event, bench/bare-bolt-server.ts)
// alone, and beside busy processes that share nothing with it but the cores, each in a session of its own: at the
// lowest priority there is (SCHED_IDLE, set with util-linux's chrt), at nice 19 or nice 10; spinning in a tight
// loop (almost no memory), walking a 64 MB array (evicting the caches), or a real LoRA training
// (trainer/lora_train.py on stories260K) at nice 10, as the bot starts its trainer. Says how much a busy neighbour
// slows the floor here, whatever it does and at whatever ordinary priority.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TRAINER_SCRIPT } from '@verdict/platform/engines/pytorch-trainer';
import { pythonWithTorch, STORIES_MODEL_FILE } from '../test/kit/engines.js';
import { sleep } from '../test/kit/wait.js';
import { botEnv, spawnBot } from './bot.js';
import { startRemoteFakes } from './remote-fakes.js';
import { startPostgres } from './postgres.js';
import { load } from './slack-ack.js';
import { describeScheduler } from './sched.js';
import { envNumber, fmt, isMain, median, report } from './stats.js';

const ROUNDS = envNumber('BENCH_BURN_ROUNDS', 3);

/** The node programs that keep a core busy; `train` is a real LoRA training of stories260K (packages/platform/trainer/lora_train.py, 2 threads), for as long as the round lasts. */
const PROGRAMS = {
  spin: 'for (;;) {}',
  walk: 'const a = new Float64Array(8 * 1024 * 1024); for (let i = 0; ; i = (i + 4099) % a.length) a[i] += 1;',
};
type Burner = { what: keyof typeof PROGRAMS | 'train'; priority: 'idle' | 'nice19' | 'nice10' };
const trains = (c: Condition) => c.burners.some((b) => b.what === 'train');
let trainSpec: string | undefined;
let trainPython: string | null = null;
type Condition = { name: string; burners: Burner[] };

const CONDITIONS: Condition[] = [
  { name: 'alone', burners: [] },
  { name: '2 spinners at SCHED_IDLE', burners: [{ what: 'spin', priority: 'idle' }, { what: 'spin', priority: 'idle' }] },
  { name: '2 cache walkers at SCHED_IDLE', burners: [{ what: 'walk', priority: 'idle' }, { what: 'walk', priority: 'idle' }] },
  { name: '2 spinners at nice 19', burners: [{ what: 'spin', priority: 'nice19' }, { what: 'spin', priority: 'nice19' }] },
  { name: '1 spinner at SCHED_IDLE', burners: [{ what: 'spin', priority: 'idle' }] },
  { name: '2 spinners at nice 10', burners: [{ what: 'spin', priority: 'nice10' }, { what: 'spin', priority: 'nice10' }] },
  // What the bot starts with real engines: a training at nice 10 (src/platform/engines/pytorch-trainer.ts).
  { name: 'a LoRA training at nice 10', burners: [{ what: 'train', priority: 'nice10' }] },
];
// BENCH_BURN_ONLY=1,6: only these conditions (by their index above) beside 'alone'.
const ONLY = process.env.BENCH_BURN_ONLY?.split(',');
if (ONLY) CONDITIONS.splice(0, CONDITIONS.length, ...CONDITIONS.filter((_, i) => i === 0 || ONLY.includes(String(i))));

/** Busy processes still running: in sessions of their own, they would outlive a bench stopped with Ctrl-C. */
const live = new Set<ChildProcess>();
process.on('exit', () => live.forEach((child) => child.kill('SIGKILL')));
process.on('SIGINT', () => process.exit(130));

/** A busy process in a session of its own; `chrt` execs node at SCHED_IDLE, so the pid is node's either way. */
function startBurner(b: Burner): ChildProcess {
  const command = b.what === 'train' ? [trainPython!, TRAINER_SCRIPT, '--spec', trainSpec!] : [process.execPath, '-e', PROGRAMS[b.what]];
  const options = { stdio: 'ignore' as const, detached: true, env: { ...process.env, OMP_NUM_THREADS: '2' } };
  const child = b.priority === 'idle' ? spawn('chrt', ['--idle', '0', ...command], options) : spawn(command[0]!, command.slice(1), options);
  child.on('error', (error) => {
    console.error(`could not start a busy process (${b.priority === 'idle' ? 'chrt --idle, from util-linux' : command[0]}): ${error.message}`);
    process.exit(1);
  });
  if (b.priority === 'nice19' && child.pid) os.setPriority(child.pid, 19);
  if (b.priority === 'nice10' && child.pid) os.setPriority(child.pid, 10);
  live.add(child);
  child.on('exit', () => live.delete(child));
  return child;
}

/** A training of stories260K on 64 made-up examples, with more epochs than any round lasts. */
async function writeTrainingSpec(dir: string): Promise<string> {
  const tokensPath = path.join(dir, 'tokens.jsonl');
  const examples = Array.from({ length: 64 }, (_, i) => JSON.stringify({ prompt: [1, 10 + (i % 200), 20 + ((i * 7) % 200)], completion: [30 + ((i * 13) % 200), 40 + ((i * 3) % 200), 2] }));
  await writeFile(tokensPath, examples.join('\n') + '\n');
  const specPath = path.join(dir, 'spec.json');
  await writeFile(
    specPath,
    JSON.stringify({ jobId: 'bench', baseModelPath: STORIES_MODEL_FILE, tokensPath, adapterPath: path.join(dir, 'adapter.gguf'), device: 'cpu', threads: 2, hyperparameters: { epochs: 100_000 } }),
  );
  return specPath;
}

export async function main(): Promise<void> {
  console.log(`floor-beside-cpu: the ack floor at 200/s, ${ROUNDS} rounds of: ${CONDITIONS.map((c) => c.name).join('; ')}`);
  console.log(`  ${describeScheduler()}`);
  const postgres = await startPostgres();
  const fakes = await startRemoteFakes();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-bench-burn-'));
  if (CONDITIONS.some(trains)) {
    trainPython = pythonWithTorch();
    const reason = !trainPython ? 'no python3 with torch and numpy (see the README)' : undefined;
    if (reason) {
      console.log(`  the LoRA training conditions are left out: ${reason}`);
      CONDITIONS.splice(0, CONDITIONS.length, ...CONDITIONS.filter((c) => !trains(c)));
    } else trainSpec = await writeTrainingSpec(dir);
  }
  const p99s = new Map<string, number[]>(CONDITIONS.map((c) => [c.name, []]));
  try {
    const env = botEnv({ slackApiUrl: fakes.slackApiUrl, anthropicUrl: fakes.anthropicUrl, databaseUrl: await postgres.createDatabase('burn'), dataDir: dir });
    for (let r = 0; r < ROUNDS; r += 1) {
      for (const condition of CONDITIONS) {
        const floor = await spawnBot({ ...env, BENCH_FLOOR_DATABASE_URL: await postgres.createDatabase('floor') }, { script: 'bench/bare-bolt-server.ts' });
        const burners: ChildProcess[] = [];
        for (const b of condition.burners) burners.push(startBurner(b));
        // Past the training's start-up (importing torch, reading the model): the load meets its epochs.
        if (trains(condition)) await sleep(4000);
        try {
          const m = await load(floor, env.SLACK_SIGNING_SECRET!);
          p99s.get(condition.name)!.push(m.p99);
          console.log(`  round ${r + 1}, ${condition.name}: p50 ${fmt(m.p50, 2)} p99 ${fmt(m.p99, 2)} max ${fmt(m.max)} ms (lag ${fmt(m.maxLagMs)}), non-200 ${m.failed}`);
        } finally {
          for (const b of burners) b.kill('SIGKILL');
          await floor.stop();
        }
      }
    }
  } finally {
    await fakes.stop();
    await postgres.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const alone = median(p99s.get('alone')!);
  for (const [name, values] of p99s) {
    report(`floor p99, ${name} (median)`, `${fmt(median(values), 2)} ms [${values.map((v) => fmt(v, 2)).join(', ')}]${name === 'alone' ? '' : `: ${fmt(median(values) / alone, 2)}x alone`}`);
  }
}

if (isMain(import.meta.url)) await main();
