// The fakes of Slack's Web API and the Messages API in a process of their own, for the ingest
// benches: they stand for services on other machines, so they must not share the load generator's
// event loop (its lag would count as the bot's latency) nor outrank the bot for the CPU: the
// parent (bench/remote-fakes.ts) starts this process at a lower priority.
import os from 'node:os';
import { startScriptedAnthropic, text } from '../test/kit/fakes/anthropic/index.js';
import { startFakeSlack } from '../test/kit/fakes/slack/index.js';
import { TEAM } from './bot.js';

const cpu = `nice ${os.getPriority()}`;
const slack = await startFakeSlack({ teamId: TEAM });
const model = await startScriptedAnthropic(() => ({ content: [text('Noted.')] }));
process.send?.({ type: 'ready', slackApiUrl: slack.apiUrl, anthropicUrl: model.baseURL, cpu });
const exit = () => void Promise.allSettled([slack.stop(), model.stop()]).finally(() => process.exit(0));
process.on('SIGTERM', exit);
process.on('disconnect', exit);
