// The tests' child processes run the sources compiled once per run (test/kit/compiled.ts): checked
// here so that a broken compile cannot silently send every process test back through tsx.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { inject, describe, expect, it } from 'vitest';
import { compiled, nodeArgs, removeStaleBuilds, ROOT } from './compiled.js';

describe('the sources compiled for the tests', () => {
  it('runs the bot, the sandbox CLI and the fixtures from the run\'s compiled folder, as JavaScript', async () => {
    const root = inject('compiledRoot');
    expect(path.dirname(root)).toBe(ROOT);
    for (const script of ['src/main.ts', 'packages/platform/src/sandbox/cli.ts', 'test/store/fixtures/hold-postgres.ts']) {
      const args = await nodeArgs(script);
      expect(args).toEqual(['--enable-source-maps', path.join(root, script.replace(/\.ts$/, '.js'))]);
    }
    const main = await readFile((await compiled('src/main.ts'))!, 'utf8');
    expect(main).not.toMatch(/^import type /m);
    expect(main).toMatch(/from "\.\/app\.js"/);
  });

  it('falls back to tsx for a file it did not compile', async () => {
    expect(await compiled('test/kit/compiled.test.ts')).toBeUndefined();
    expect(await nodeArgs('test/kit/compiled.test.ts')).toEqual(['--import', 'tsx', path.join(ROOT, 'test/kit/compiled.test.ts')]);
  });

  it('starts: the compiled bot reports a configuration problem as the TypeScript one does', async () => {
    const run = promisify(execFile);
    const failure = await run(process.execPath, await nodeArgs('src/main.ts'), { cwd: ROOT, env: { PATH: process.env.PATH ?? '' } }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect('code' in failure ? failure.code : 0).not.toBe(0);
    expect(`${failure.stdout}${failure.stderr}`).toMatch(/SLACK_BOT_TOKEN/);
  });

  it('removes the folder of a run whose process is gone, and keeps this run\'s', async () => {
    const gone = spawnSync('true').pid!;
    const stale = path.join(ROOT, `.test-build-${gone}`);
    await mkdir(path.join(stale, 'src'), { recursive: true });
    await removeStaleBuilds();
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(inject('compiledRoot'))).toBe(true);
  });
});
