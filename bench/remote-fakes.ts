// Starts the fakes the ingest benches point the bot at: by default in a child process at a lower
// priority (bench/fakes-process.ts), as stand-ins for remote services; BENCH_FAKES_IN_PROCESS=1
// keeps them in the bench process, as before, to compare.
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { startScriptedAnthropic, text } from '../test/kit/fakes/anthropic/index.js';
import { startFakeSlack } from '../test/kit/fakes/slack/index.js';
import { ROOT, TEAM } from './bot.js';

export interface RemoteFakes {
  slackApiUrl: string;
  anthropicUrl: string;
  /** Where they run, for the bench's first line. */
  where: string;
  stop(): Promise<void>;
}

/** How much lower than the bench the fakes run (nice levels). */
const FAKES_NICENESS = 10;

export async function startRemoteFakes(): Promise<RemoteFakes> {
  if (process.env.BENCH_FAKES_IN_PROCESS === '1') {
    const slack = await startFakeSlack({ teamId: TEAM });
    const model = await startScriptedAnthropic(() => ({ content: [text('Noted.')] }));
    return {
      slackApiUrl: slack.apiUrl,
      anthropicUrl: model.baseURL,
      where: 'in the bench process (BENCH_FAKES_IN_PROCESS=1)',
      stop: async () => {
        await slack.stop();
        await model.stop();
      },
    };
  }
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/fakes-process.ts')], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: true,
  });
  if (child.pid !== undefined) os.setPriority(child.pid, Math.min(19, os.getPriority() + FAKES_NICENESS));
  const { cpu, ...urls } = await new Promise<{ slackApiUrl: string; anthropicUrl: string; cpu: string }>((resolve, reject) => {
    child.once('message', (raw) => resolve(raw as { slackApiUrl: string; anthropicUrl: string; cpu: string }));
    child.once('exit', (code) => reject(new Error(`the fakes process exited with code ${code}`)));
  });
  return {
    ...urls,
    where: `in a child process at ${cpu}`,
    stop: async () => {
      if (child.exitCode === null) {
        const done = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await done;
      }
    },
  };
}
