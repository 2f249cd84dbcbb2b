// The fakes of Slack's Web API and the Messages API in a process of their own, for the ingest
// benches: they stand for services on other machines, so they must not share the load generator's
// event loop (its lag would count as the bot's latency) nor outrank the bot for the CPU. The
// parent (bench/remote-fakes.ts) lowers this process's priority; every thread follows here, and the
// process joins the worker role's idle CPU cgroup where the machine allows it (unless WORKER_PRIORITY=nice).
import os from 'node:os';
import { startScriptedAnthropic, text } from '../test/kit/fakes/anthropic/index.js';
import { startFakeSlack } from '../test/kit/fakes/slack/index.js';
import { lowerProcessPriority } from '../src/priority.js';
import { TEAM } from './bot.js';

// As the bot's worker does (WORKER_PRIORITY, default idle), so an A/B of that setting moves both.
const cpu = lowerProcessPriority(os.getPriority(), { idleGroup: process.env.WORKER_PRIORITY !== 'nice' });
const slack = await startFakeSlack({ teamId: TEAM });
const model = await startScriptedAnthropic(() => ({ content: [text('Noted.')] }));
process.send?.({ type: 'ready', slackApiUrl: slack.apiUrl, anthropicUrl: model.baseURL, cpu });
const exit = () => void Promise.allSettled([slack.stop(), model.stop()]).finally(() => process.exit(0));
process.on('SIGTERM', exit);
process.on('disconnect', exit);
