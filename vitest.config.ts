import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most files wait on I/O (Postgres, HTTP between processes): two at a time on 2 cores.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
