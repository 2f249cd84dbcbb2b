// Times compareRuns against its targets: 100,000 binary questions in any order under 100 ms and
// 1,000,000 under 1 s (wall, median), then 100,000 graded questions with 10,000 bootstrap resamples.
import { compareRuns, type QuestionOutcome } from '../src/analysis/index.js';
import { nextUnit, seedRandom } from '../src/analysis/random.js';

const CATEGORIES = ['algebra', 'geometry', 'code', 'reading', 'logic', 'physics', 'chemistry', 'history', 'law', 'medicine'];

interface Runs {
  before: QuestionOutcome[];
  after: QuestionOutcome[];
}

function makeRuns(n: number, graded: boolean): Runs {
  const random = seedRandom(7);
  const before: QuestionOutcome[] = new Array(n);
  const after: QuestionOutcome[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const questionId = `q-${i}`;
    const category = CATEGORIES[i % CATEGORIES.length]!;
    if (graded) {
      const score = nextUnit(random);
      const moved = Math.min(1, Math.max(0, score + (nextUnit(random) - 0.45) * 0.2));
      before[i] = { questionId, category, score };
      after[i] = { questionId, category, score: moved };
    } else {
      const right = nextUnit(random) < 0.6;
      const flip = nextUnit(random) < (right ? 0.05 : 0.15);
      before[i] = { questionId, category, correct: right };
      after[i] = { questionId, category, correct: flip ? !right : right };
    }
  }
  return { before, after };
}

/**
 * The same runs with `after` in random order, so the join cannot follow the order of `before`.
 * The objects are rebuilt in their new order, as parsing a response listing them that way would.
 */
function shuffled(runs: Runs): Runs {
  const random = seedRandom(11);
  const order = runs.after.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(nextUnit(random) * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const after = order.map((i) => {
    const q = runs.after[i]!;
    return { questionId: `q-${i}`, category: q.category, correct: q.correct };
  });
  return { before: runs.before, after };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Wall-clock and CPU milliseconds; CPU time is the steadier figure on a shared machine. */
function time(label: string, runs: number, fn: () => string, target: number): void {
  fn();
  const wall: number[] = [];
  const cpu: number[] = [];
  let summary = '';
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    const startCpu = process.cpuUsage();
    summary = fn();
    const used = process.cpuUsage(startCpu);
    wall.push(performance.now() - start);
    cpu.push((used.user + used.system) / 1000);
  }
  const m = median(wall);
  const status = m <= target ? 'met' : 'MISSED';
  console.log(
    `${label}: median ${m.toFixed(0)} ms wall, ${median(cpu).toFixed(0)} ms CPU over ${runs} runs ` +
      `(wall min ${Math.min(...wall).toFixed(0)}, max ${Math.max(...wall).toFixed(0)}); target < ${target} ms wall: ${status}`,
  );
  console.log(`  ${summary}`);
}

// Users' benchmarks run to about 100,000 questions; 1,000,000 is the headroom.
const binary100k = shuffled(makeRuns(100_000, false));
time('binary, 100,000 questions, after run shuffled', 15, () => compareRuns(binary100k).verdict.reason, 100);
const binary1m = makeRuns(1_000_000, false);
time('binary, 1,000,000 questions, runs in the same order', 7, () => compareRuns(binary1m).verdict.reason, 1000);
const binary1mShuffled = shuffled(binary1m);
time('binary, 1,000,000 questions, after run shuffled', 7, () => compareRuns(binary1mShuffled).verdict.reason, 1000);

const graded = makeRuns(100_000, true);
time(
  'graded, 100,000 questions x 10,000 resamples',
  5,
  () => compareRuns({ ...graded, scoring: 'graded', bootstrap: { resamples: 10_000 } }).verdict.reason,
  2000,
);
