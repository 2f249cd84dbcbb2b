import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'chaos/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two test files at a time on this 2-core machine: about 2.5 instead of 4.8 minutes. Most files
    // wait on child processes, timers and Postgres rather than on the CPU. (Tried before and set
    // back when runs were flaky; the flakes were real bugs, fixed since: docs/reliability.md.)
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
