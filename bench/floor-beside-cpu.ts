// Diagnostic: the floor of the ack bench (bare Bolt + one durable INSERT per event, bench/bare-bolt-server.ts)
// alone, and beside busy processes that share nothing with it but the two cores, each in a session of its own
// (as the worker role and every Postgres backend are): at the lowest priority there is (SCHED_IDLE, set with
// util-linux's chrt), at nice 19, or at nice 19 with their sessions' autogroups at nice 19 too (what src/priority.ts
// does for the worker role and its backends), spinning in a tight loop (almost no memory) or walking a 64 MB array
// (evicting the caches). Says how much a busy neighbour slows the floor here, whatever it does and at whatever
// priority; BENCH_NO_AUTOGROUP=1 (root) measures the same with Linux autogroups off (bench/sched.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { lowerAutogroup } from '../src/priority.js';
import { sleep } from '../test/kit/wait.js';
import { botEnv, spawnBot } from './bot.js';
import { startRemoteFakes } from './remote-fakes.js';
import { startPostgres } from './postgres.js';
import { load } from './slack-ack.js';
import { describeScheduler, withBenchScheduler } from './sched.js';
import { envNumber, fmt, isMain, median, report } from './stats.js';

const ROUNDS = envNumber('BENCH_BURN_ROUNDS', 3);

const SPIN = 'for (;;) {}';
const WALK = 'const a = new Float64Array(8 * 1024 * 1024); for (let i = 0; ; i = (i + 4099) % a.length) a[i] += 1;';

type Burner = { code: string; priority: 'idle' | 'nice19' | 'session19' };
type Condition = { name: string; burners: Burner[] };

const CONDITIONS: Condition[] = [
  { name: 'alone', burners: [] },
  { name: '2 spinners at SCHED_IDLE', burners: [{ code: SPIN, priority: 'idle' }, { code: SPIN, priority: 'idle' }] },
  { name: '2 cache walkers at SCHED_IDLE', burners: [{ code: WALK, priority: 'idle' }, { code: WALK, priority: 'idle' }] },
  { name: '2 spinners at nice 19', burners: [{ code: SPIN, priority: 'nice19' }, { code: SPIN, priority: 'nice19' }] },
  // What the worker role does for itself and its Postgres backends (src/priority.ts): its session's autogroup lowered too.
  { name: '2 spinners at nice 19, their sessions at nice 19', burners: [{ code: SPIN, priority: 'session19' }, { code: SPIN, priority: 'session19' }] },
  { name: '1 spinner at SCHED_IDLE', burners: [{ code: SPIN, priority: 'idle' }] },
];

/** Busy processes still running: in sessions of their own, they would outlive a bench stopped with Ctrl-C. */
const live = new Set<ChildProcess>();
process.on('exit', () => live.forEach((child) => child.kill('SIGKILL')));
process.on('SIGINT', () => process.exit(130));

/** A busy process in a session of its own; `chrt` execs node at SCHED_IDLE, so the pid is node's either way. */
async function startBurner(b: Burner): Promise<ChildProcess> {
  const args = ['-e', b.code];
  const options = { stdio: 'ignore' as const, detached: true };
  const child = b.priority === 'idle' ? spawn('chrt', ['--idle', '0', process.execPath, ...args], options) : spawn(process.execPath, args, options);
  child.on('error', (error) => {
    console.error(`could not start a busy process (${b.priority === 'idle' ? 'chrt --idle, from util-linux' : 'node'}): ${error.message}`);
    process.exit(1);
  });
  if (b.priority !== 'idle' && child.pid) os.setPriority(child.pid, 19);
  live.add(child);
  // The kernel takes a few autogroup changes a second from an unprivileged process.
  while (b.priority === 'session19' && child.pid && lowerAutogroup(child.pid, 19) === 'again') await sleep(120);
  child.on('exit', () => live.delete(child));
  return child;
}

export async function main(): Promise<void> {
  console.log(`floor-beside-cpu: the ack floor at 200/s, ${ROUNDS} rounds of: ${CONDITIONS.map((c) => c.name).join('; ')}`);
  console.log(`  ${describeScheduler()}`);
  const postgres = await startPostgres();
  const fakes = await startRemoteFakes();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-bench-burn-'));
  const p99s = new Map<string, number[]>(CONDITIONS.map((c) => [c.name, []]));
  try {
    const env = botEnv({ slackApiUrl: fakes.slackApiUrl, anthropicUrl: fakes.anthropicUrl, databaseUrl: await postgres.createDatabase('burn'), dataDir: dir });
    for (let r = 0; r < ROUNDS; r += 1) {
      for (const condition of CONDITIONS) {
        const floor = await spawnBot({ ...env, BENCH_FLOOR_DATABASE_URL: await postgres.createDatabase('floor') }, { script: 'bench/bare-bolt-server.ts' });
        const burners: ChildProcess[] = [];
        for (const b of condition.burners) burners.push(await startBurner(b));
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

if (isMain(import.meta.url)) await withBenchScheduler(main);
