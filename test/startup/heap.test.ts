// The bot bounds V8's heap growth at start-up: after each full collection the heap may grow to 1.5x
// what is live, not the default of up to 4x (docs/performance.md: peak RSS of the 1,000-loop run).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { boundHeapGrowth } from '../../src/heap.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

/** Peak heap reserved (MB) by a child that keeps ~40 MB live while it churns garbage, with or without the bound. */
async function peakHeapMb(bound: boolean): Promise<number> {
  const script = `
    import { boundHeapGrowth } from './src/heap.ts';
    if (${bound}) boundHeapGrowth();
    const live = [];
    let peak = 0;
    for (let i = 0; i < 300; i += 1) {
      const junk = [];
      for (let j = 0; j < 20000; j += 1) junk.push({ a: j, b: 'x' + j, c: [j, j + 1] });
      live.push(junk.slice(0, 1000));
      if (live.length > 100) live.shift();
      peak = Math.max(peak, process.memoryUsage().heapTotal);
    }
    console.log(Math.round(peak / 1e6));`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root });
  return Number(stdout.trim());
}

describe('heap growth', () => {
  it('keeps the heap of a churning process well below what V8 grows it to by default', async () => {
    const [unbounded, bounded] = await Promise.all([peakHeapMb(false), peakHeapMb(true)]);
    expect(bounded).toBeGreaterThan(0);
    expect(bounded).toBeLessThan(unbounded * 0.85);
  }, 60_000);

  it('leaves a process started with its own --heap-growing-percent as it is', () => {
    expect(boundHeapGrowth(['--heap-growing-percent=20'])).toBe(false);
    expect(boundHeapGrowth(['--heap_growing_percent=20'])).toBe(false);
  });
});
