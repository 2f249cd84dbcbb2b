// Prints one plain closing line, "N passed, N failed, N skipped", after vitest's own summary.
import type { Reporter, RunnerTestFile } from 'vitest/node';

type Task = { type: string; mode?: string; result?: { state?: string }; tasks?: Task[] };

function count(tasks: readonly Task[], totals: { passed: number; failed: number; skipped: number }): void {
  for (const task of tasks) {
    if (task.type === 'test') {
      if (task.result?.state === 'pass') totals.passed += 1;
      else if (task.result?.state === 'fail') totals.failed += 1;
      else totals.skipped += 1;
    }
    if (task.tasks) count(task.tasks, totals);
  }
}

export default class SummaryReporter implements Reporter {
  onFinished(files: RunnerTestFile[] = [], errors: unknown[] = []): void {
    const totals = { passed: 0, failed: 0, skipped: 0 };
    count(files as unknown as Task[], totals);
    const failed = totals.failed + (errors.length > 0 && totals.failed === 0 ? errors.length : 0);
    console.log(`\n${totals.passed} passed, ${failed} failed, ${totals.skipped} skipped`);
  }
}
