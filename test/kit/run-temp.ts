// One temporary folder per test run. The tests, the bots they start and the engines those start
// (llama.cpp, the PyTorch trainer, the fake clusters) make their folders with `os.tmpdir()`, and
// most never remove them: a full run left about 2,000 folders and 30 MB in /tmp. The global setup
// points TMPDIR, which `os.tmpdir()`, Python's `tempfile` and the child processes all read, at a
// folder of the run's own, and removes it when the run ends. A run killed before its teardown
// leaves its folder behind; the next run removes it (its process is gone). KEEP_TEST_TMP=1 keeps
// the folder, to read a failed test's logs, and says where it is.
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { reachableTempDir } from '@verdict/runtime/embedded-postgres';
import { removeFoldersOfGoneProcesses } from './proc.js';

const PREFIX = 'verdict-test-run-';

/**
 * Makes this run's temporary folder, under the system's (or /tmp, where that one is private to root:
 * the embedded Postgres the tests start runs as its own user), and sets TMPDIR to it (for the test
 * processes the run starts after this).
 */
export async function useRunTempDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const parent = reachableTempDir();
  await removeFoldersOfGoneProcesses(parent, PREFIX);
  const dir = path.join(parent, `${PREFIX}${process.pid}`);
  await mkdir(dir, { recursive: true });
  // As /tmp is: the embedded Postgres of a bot started as root runs as its own user, in a folder it must reach.
  await chmod(dir, 0o1777);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  return {
    dir,
    remove: async () => {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
      if (process.env.KEEP_TEST_TMP === '1') {
        console.log(`KEEP_TEST_TMP=1: this run's temporary files are in ${dir}`);
        return;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
