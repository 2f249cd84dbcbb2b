// End-to-end harness: the real bot (in-process or as a child process) on loopback in HTTP mode, a
// fake Slack Web API, a scripted Messages API, the sandbox platform, and a fresh Postgres database.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { startBot, type Bot, type BotOptions } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createDb, type Db, type DbHandle } from '../../src/store/db.js';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { PLAN_METADATA_TYPE } from '../../src/slack/plan-message.js';
import { appMention, type FakeMessage, type PlanState, type FakeSlack, type FakeSlackOptions, sendEvent, type SendEventOptions, startFakeSlack, userMessage } from './fakes/slack/index.js';
import { startScriptedAnthropic, type Script, type ScriptedAnthropic } from './fakes/anthropic/index.js';
import { fakesEnv } from './bot-env.js';
import { nodeArgs } from './compiled.js';
import { createTestDatabase } from './database.js';
import { descendants, isRunning } from './proc.js';
import { waitUntil } from './wait.js';

export const TEAM = 'T0FAKE';
export const CHANNEL = 'C0LOOP';

export interface HarnessOptions {
  script: Script;
  /** Extra environment for the bot (overrides the defaults below). */
  env?: Record<string, string>;
  /** 'process' runs the bot as a child process (`src/main.ts`, compiled once per test run: ./compiled.ts), so a test can SIGKILL it. */
  mode?: 'inprocess' | 'process';
  botOptions?: BotOptions;
  /** Use this database instead of a fresh one on the vitest global-setup server (chaos scripts, a dedicated server). */
  databaseUrl?: string;
  /** Share a fake Slack (or a scripted model) with another harness, e.g. two replicas; the harness then does not stop it. */
  slack?: FakeSlack;
  model?: ScriptedAnthropic;
  slackOptions?: FakeSlackOptions;
}

/**
 * Slack's pace in the harness: the bot (SLACK_PACE_SCALE) and the fake Slack's limits
 * (`paceScale`) run ten times faster than Slack's, so a loop is not mostly waiting a second between
 * posts. A test of the pace itself sets its own (`slackOptions.paceScale`) and measures against `slackPace(scale)`.
 */
export const HARNESS_PACE_SCALE = 0.1;

export interface Harness {
  env: Record<string, string>;
  slack: FakeSlack;
  model: ScriptedAnthropic;
  /** The test's own connection to the bot's database, for assertions. */
  db: DbHandle;
  bot(): Bot | undefined;
  url(): string;
  /** Everything the bot logged (JSON lines). */
  logs(): Promise<string>;
  mention(input: { user: string; text: string; channel?: string; threadTs?: string; team?: string; files?: readonly object[] }, opts?: SendEventOptions): Promise<{ status: number; ts: string; eventId: string; body: string }>;
  reply(input: { user: string; text: string; threadTs: string; channel?: string; team?: string; files?: readonly object[] }, opts?: SendEventOptions): Promise<{ status: number; ts: string }>;
  /** Bot posts in a thread, in post order: the step reports (the live plan message is not one, nor the files it shared: `filePosts`). */
  posts(threadTs: string, channel?: string): FakeMessage[];
  /** Messages sharing a file the bot uploaded in a thread (the comparison's chart), in post order. */
  filePosts(threadTs: string, channel?: string): FakeMessage[];
  /** Each state of the thread's live plan message, in the order Slack took them. */
  planMessages(threadTs: string, channel?: string): PlanState[];
  waitForPosts(threadTs: string, count: number, timeoutMs?: number, channel?: string): Promise<FakeMessage[]>;
  kill(): Promise<void>;
  restart(): Promise<void>;
  /** Exits of the bot process that the harness did not cause (crashes), in process mode. */
  crashes: Array<{ code: number | null; signal: string | null }>;
  stop(): Promise<void>;
}

export interface SandboxCounts {
  runs: number;
  trainings: number;
  datasets: number;
}

/** What the sandbox platform launched, read from its own schema in the bot's database. */
export async function sandboxCounts(db: Db): Promise<SandboxCounts> {
  const row = await sql<{ runs: string; trainings: string; datasets: string }>`
    select (select count(*) from sandbox.runs) as runs,
           (select count(*) from sandbox.trainings) as trainings,
           (select count(*) from sandbox.datasets) as datasets`.execute(db);
  const r = row.rows[0]!;
  return { runs: Number(r.runs), trainings: Number(r.trainings), datasets: Number(r.datasets) };
}

/** The comparison post: the one with a table block. */
export function isVerdict(post: { blocks?: unknown[] }): boolean {
  return JSON.stringify(post.blocks ?? []).includes('"type":"table"');
}

/** Waits for the comparison post in a thread. */
export async function waitForVerdict(h: Harness, threadTs: string, timeoutMs = 60_000, channel?: string) {
  return waitUntil(() => h.posts(threadTs, channel).find(isVerdict), timeoutMs, `the comparison message in ${threadTs}`);
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const slack = options.slack ?? (await startFakeSlack({ teamId: TEAM, paceScale: HARNESS_PACE_SCALE, ...options.slackOptions }));
  const model = options.model ?? (await startScriptedAnthropic(options.script));
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase('e2e'));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-e2e-'));
  const logFile = path.join(dir, 'bot.log');
  const logStream = createWriteStream(logFile, { flags: 'a' });
  // Every source appends through this, never through pipe(): a line logged after stop() had ended
  // the file reached it through the pipe, an uncaught 'write after end' that failed a whole test
  // run. Such a line is printed instead, to say what outlived the bot's stop().
  const appendToLog = (chunk: Buffer | string) => {
    if (!logStream.writableEnded) logStream.write(chunk);
    else console.error(`[harness] logged after the bot stopped: ${String(chunk).slice(0, 2_000)}`);
  };
  const mode = options.mode ?? 'inprocess';
  let port = mode === 'process' ? await freePort() : 0;
  const env: Record<string, string> = {
    ...fakesEnv({ slackApiUrl: slack.apiUrl, anthropicUrl: model.baseURL, databaseUrl, dataDir: dir, port }),
    WORKER_STALE_SECONDS: '2',
    WORKER_CONCURRENCY: '4',
    RECONCILE_CRON: '*/2 * * * * *',
    SLACK_PACE_SCALE: String(slack.paceScale),
    ...options.env,
  };
  const db = createDb(databaseUrl, { max: 4 });

  let bot: Bot | undefined;
  let child: ChildProcess | undefined;
  let url = '';
  const killing = new WeakSet<ChildProcess>();

  const start = async () => {
    if (mode === 'inprocess') {
      const config = loadConfig(env);
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          appendToLog(chunk);
          done();
        },
      });
      const logger = createLogger({
        level: config.logLevel,
        secrets: [env.SLACK_BOT_TOKEN, env.SLACK_SIGNING_SECRET, env.ANTHROPIC_API_KEY, env.BENCHGEN_API_TOKEN, env.BENCHGEN_WEBHOOK_SECRET],
        destination: sink,
      });
      bot = await startBot(config, { logger, host: '127.0.0.1', pollIntervalMs: 500, ...options.botOptions });
      url = bot.url;
      return;
    }
    // A port taken between freePort() and the bot's bind (by another test file's process binding
    // port 0, for the bot or for the sandbox next to it) is a race of the test run, not the bot's
    // failure: the start is tried again on a new port, at most twice.
    for (let attempt = 1; ; attempt += 1) {
      const output = await startProcess();
      if (output === undefined) return;
      if (!/already in use/.test(output) || attempt === 3) {
        throw new Error(`bot exited during start-up; its last output:\n${output.split('\n').slice(-15).join('\n')}`);
      }
      port = await freePort();
      env.PORT = String(port);
    }
  };

  /** Starts the bot process; undefined once ready, or what it printed when it exited during start-up. */
  const startProcess = async (): Promise<string | undefined> => {
    const own = spawn(process.execPath, await nodeArgs('src/main.ts'), {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { ...process.env, ...env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = own;
    let output = '';
    let ready = false;
    own.once('exit', (code, signal) => {
      if (ready && !killing.has(own)) harness.crashes.push({ code, signal });
    });
    for (const stream of [own.stdout!, own.stderr!]) {
      stream.on('data', (chunk: Buffer) => {
        appendToLog(chunk);
        if (!ready && output.length < 100_000) output += chunk.toString('utf8');
      });
    }
    url = `http://127.0.0.1:${port}`;
    const exited = new Promise<string>((resolve) => own.once('exit', () => resolve(output)));
    const outcome = await Promise.race([
      exited,
      waitUntil(
        async () => {
          const res = await fetch(`${url}/healthz`).catch(() => undefined);
          if (!res?.ok) return undefined;
          const text = await readFile(logFile, 'utf8');
          return text.includes('"bot ready"') ? true : undefined;
        },
        60_000,
        'the bot process to be ready',
      ),
    ]);
    if (typeof outcome === 'string') {
      child = undefined;
      return outcome;
    }
    ready = true;
    return undefined;
  };

  const harness: Harness = {
    env,
    slack,
    model,
    db,
    crashes: [],
    bot: () => bot,
    url: () => url,
    logs: () => readFile(logFile, 'utf8'),
    mention: async (input, opts) => {
      const event = appMention({ channel: CHANNEL, team: TEAM, ...input });
      slack.seedMessage({ channel: (event.channel as string), user: input.user, text: input.text, ts: event.ts as string, ...(input.threadTs ? { threadTs: input.threadTs } : {}) });
      const delivery = await sendEvent(`${url}/slack/events`, env.SLACK_SIGNING_SECRET!, event, { teamId: input.team ?? TEAM, ...opts });
      return { status: delivery.status, ts: event.ts as string, eventId: delivery.eventId, body: delivery.body };
    },
    reply: async (input, opts) => {
      const event = userMessage({ channel: CHANNEL, team: TEAM, ...input });
      slack.seedMessage({ channel: event.channel as string, user: input.user, text: input.text, ts: event.ts as string, threadTs: input.threadTs });
      const delivery = await sendEvent(`${url}/slack/events`, env.SLACK_SIGNING_SECRET!, event, { teamId: input.team ?? TEAM, ...opts });
      return { status: delivery.status, ts: event.ts as string };
    },
    posts: (threadTs, channel = CHANNEL) =>
      slack.messages(channel, threadTs).filter((m) => !m.seeded && m.metadata?.event_type !== PLAN_METADATA_TYPE && !m.files?.length),
    filePosts: (threadTs, channel = CHANNEL) => slack.messages(channel, threadTs).filter((m) => !m.seeded && (m.files?.length ?? 0) > 0),
    planMessages: (threadTs, channel = CHANNEL) => slack.planStates({ channel, threadTs, metadataType: PLAN_METADATA_TYPE }),
    waitForPosts: (threadTs, count, timeoutMs = 30_000, channel = CHANNEL) =>
      waitUntil(
        () => {
          const posts = harness.posts(threadTs, channel);
          return posts.length >= count ? posts : undefined;
        },
        timeoutMs,
        `${count} bot post(s) in thread ${threadTs}`,
      ),
    kill: async () => {
      if (child) {
        // A child that already died (a crash the test is about to report) has no 'exit' left to wait for.
        const exited = child.exitCode !== null || child.signalCode !== null;
        const done = exited ? Promise.resolve() : new Promise((resolve) => child!.once('exit', resolve));
        killing.add(child);
        // The whole bot dies at once, as in a crash of its machine: the parent of npm start and its
        // role processes. Killing the parent alone left the worker running until it noticed, long
        // enough under load to finish a model call released right after the kill.
        const roles = exited ? [] : descendants(child.pid!);
        if (!exited) child.kill('SIGKILL');
        for (const pid of roles) killQuietly(pid);
        await done;
        await waitUntil(() => (roles.every((pid) => !isRunning(pid)) ? true : undefined), 10_000, 'the killed role processes to exit', 20);
        child = undefined;
      } else if (bot) {
        await bot.stop();
        bot = undefined;
      }
    },
    restart: async () => {
      await harness.kill();
      await start();
    },
    stop: async () => {
      await harness.kill();
      await db.close();
      if (!options.slack) await slack.stop();
      if (!options.model) await model.stop();
      await new Promise<void>((resolve) => logStream.end(resolve));
    },
  };
  await start();
  return harness;
}
