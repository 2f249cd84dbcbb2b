// Reliability (fast variant): Postgres restarted mid-loop, with the bot as a child process.
import { describe, expect, it } from 'vitest';
import { postgresRestart } from '../../chaos/faults.js';
import { printFigure } from '../../chaos/lib.js';

describe('reliability: Postgres restarted', () => {
  // Skipped in `npm test` for now, for a reason that is not solved: inside the full suite this
  // scenario hangs in about half the runs after the restart (the bot logs nothing more and does not
  // stop on SIGTERM), while it passes every time alone and as `npx tsx chaos/postgres-restart.ts`.
  // Diagnosis so far and the fixes made on the way: docs/reliability.md, "Known gaps". The worker
  // recovery it exercises is covered deterministically by test/jobs/worker-supervision.test.ts.
  // Run it with VERDICT_FLAKY_TESTS=1.
  it.runIf(process.env.VERDICT_FLAKY_TESTS === '1')('Postgres restarted mid-loop: the bot reconnects by itself and the loop finishes', async () => {
    const figure = printFigure(await postgresRestart({ restarts: 1 }));
    expect(figure.failures).toEqual([]);
  }, 240_000);
});
