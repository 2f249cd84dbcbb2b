import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'chaos/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Five test files at a time on this 2-core machine: most files wait on child processes, timers
    // and Postgres rather than on the CPU (two at a time used 52 % of the cores; four, about 75 %;
    // five, about 80 %: docs/performance.md).
    maxWorkers: 5,
    // Five worker processes for the whole run, each running file after file (their modules, such as
    // the bot's dependencies, loaded once per process instead of once per file): 266 -> 232 s
    // (docs/performance.md). Every file still gets its own database, ports and bot. The five stay up
    // to the end: with fewer kept (minWorkers below maxWorkers) vitest 3.2 ends a run that shares
    // processes in "Terminating worker thread" and leaves the forks it lost running.
    poolOptions: { forks: { isolate: false } },
    minWorkers: 5,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
