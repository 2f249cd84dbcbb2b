// A test run's temporary files go to a folder of its own, removed at the end (test/kit/run-temp.ts).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useRunTempDir } from './run-temp.js';

describe("the test run's temporary folder", () => {
  it('is where this run and its child processes write temporary files', () => {
    expect(path.basename(os.tmpdir())).toMatch(/^verdict-test-run-\d+$/);
    const child = spawnSync(process.execPath, ['-p', 'require("node:os").tmpdir()'], { encoding: 'utf8' });
    expect(child.stdout.trim()).toBe(os.tmpdir());
  });

  it("removes the folder of a run whose process is gone, makes this one's, and removes it with what it holds", async () => {
    const before = process.env.TMPDIR;
    const parent = os.tmpdir();
    const gone = spawnSync('true').pid!;
    const stale = path.join(parent, `verdict-test-run-${gone}`);
    await mkdir(path.join(stale, 'verdict-e2e-x'), { recursive: true });
    const live = path.join(parent, `verdict-test-run-${process.ppid}`);
    await mkdir(live, { recursive: true });

    const temp = await useRunTempDir();
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(temp.dir).toBe(path.join(parent, `verdict-test-run-${process.pid}`));
    expect(os.tmpdir()).toBe(temp.dir);
    expect((await stat(temp.dir)).mode & 0o7777).toBe(0o1777);
    await writeFile(path.join(temp.dir, 'bot.log'), 'x');

    await temp.remove();
    expect(existsSync(temp.dir)).toBe(false);
    expect(process.env.TMPDIR).toBe(before);
  });
});
