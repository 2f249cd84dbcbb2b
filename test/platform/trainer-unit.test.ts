// The trainer's own Python unit tests (packages/platform/trainer/tests: GGUF round trip, q/k permutation, PEFT folder, spec validation), run by npm test.
import { execFile, execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { TRAINER_SCRIPT } from '@verdict/platform/engines/pytorch-trainer';
import { pythonWithTorch } from '../kit/engines.js';

const execFileAsync = promisify(execFile);
const TESTS_DIR = path.join(path.dirname(TRAINER_SCRIPT), 'tests');

/** The python the trainer runs on (with torch), else the first with numpy, which is all these tests import; null when none has it. */
function pythonWithNumpy(): string | null {
  const withTorch = pythonWithTorch();
  if (withTorch) return withTorch;
  for (const python of [process.env.TRAINER_PYTHON, 'python3', '/usr/bin/python3']) {
    if (!python) continue;
    try {
      execFileSync(python, ['-c', 'import numpy'], { stdio: 'ignore', timeout: 60_000 });
      return python;
    } catch {
      // next one
    }
  }
  return null;
}

/** The test methods the files define (`def test_...` in tests/test*.py): what discovery must run, none lost to an import failure. */
async function definedTests(): Promise<number> {
  let count = 0;
  for (const name of await readdir(TESTS_DIR)) {
    if (!/^test.*\.py$/.test(name)) continue;
    count += ((await readFile(path.join(TESTS_DIR, name), 'utf8')).match(/^\s+def test_\w+\(/gm) ?? []).length;
  }
  return count;
}

const PYTHON = pythonWithNumpy();
if (!PYTHON) console.warn('SKIPPED the trainer\'s Python unit tests: no python with numpy (TRAINER_PYTHON, python3, /usr/bin/python3)');

describe.skipIf(!PYTHON)('the trainer\'s Python unit tests', () => {
  it('all pass, and every test the files define ran', async () => {
    const expected = await definedTests();
    expect(expected).toBeGreaterThan(0);
    let output: string;
    let code = 0;
    try {
      const result = await execFileAsync(PYTHON!, ['-m', 'unittest', 'discover', '-s', TESTS_DIR, '-v'], {
        // Nothing written beside the sources (no __pycache__ in the trainer folder the build copies).
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
        timeout: 120_000,
      });
      output = result.stdout + result.stderr;
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      code = typeof failed.code === 'number' ? failed.code : -1;
      output = `${failed.stdout ?? ''}${failed.stderr ?? ''}`;
    }
    const ran = /^Ran (\d+) tests? in /m.exec(output);
    if (code !== 0 || !ran || Number(ran[1]) !== expected) {
      console.error(`${PYTHON} -m unittest discover -s ${TESTS_DIR} -v (exit ${code}):\n${output}`);
    }
    expect(code).toBe(0);
    expect(ran?.[1]).toBe(String(expected));
    expect(output).toMatch(/^OK$/m);
  });
});
