import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'chaos/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Four test files at a time on this 2-core machine: most files wait on child processes, timers
    // and Postgres rather than on the CPU (two at a time used 52 % of the cores; four, about 75 %).
    maxWorkers: 4,
    minWorkers: 1,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
