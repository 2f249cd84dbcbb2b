// How far V8 lets the heap grow past what is live before its next full collection.
import v8 from 'node:v8';

/**
 * After a full collection V8 sets the next limit at up to 4x the live heap by default, so a bot with
 * 66 MB live ran at 500 MB RSS under 1,000 loops. 1.5x kept the same run at 356 MB for the same
 * CPU per turn (docs/performance.md).
 */
export const HEAP_GROWING_PERCENT = 50;

/**
 * Sets V8's heap growing factor for this process (V8 reads it at each collection, so setting it at
 * start-up works like the command-line flag), unless the process was started with its own
 * `--heap-growing-percent`.
 */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => arg.startsWith('--heap-growing-percent') || arg.startsWith('--heap_growing_percent'))) return false;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
