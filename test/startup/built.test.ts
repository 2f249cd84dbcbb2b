// The container runs the compiled JavaScript (`npm run build`), not the TypeScript through tsx.
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';
import { baseEnv, logLines, ROOT, runBot } from './run-bot.js';

let slack: FakeSlack | undefined;
afterAll(async () => {
  await slack?.stop();
});

describe('npm run build', () => {
  it('compiles a bot that starts and stops with plain node', async () => {
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
    expect(build.status, `${build.stdout}\n${build.stderr}`).toBe(0);
    slack = await startFakeSlack({ teamId: 'T0FAKE' });
    const run = runBot(baseEnv({ DATABASE_URL: await createTestDatabase('built'), PORT: '0', SLACK_API_URL: slack.apiUrl }), { entry: 'dist/src/main.js' });
    await run.waitFor('"bot ready"', 60_000);
    run.child.kill('SIGTERM');
    expect((await run.exited(30_000)).code).toBe(0);
    expect(logLines(run.output()).map((line) => line.msg)).toContain('stopped');
  }, 300_000);
});
