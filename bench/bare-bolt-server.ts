// Baseline for the ack bench: a bare Bolt app (HTTPReceiver, same signing, a no-op app_mention listener).
import { App, HTTPReceiver, LogLevel } from '@slack/bolt';

const receiver = new HTTPReceiver({
  signingSecret: process.env.SLACK_SIGNING_SECRET!,
  endpoints: '/slack/events',
  processBeforeResponse: true,
});
const app = new App({
  token: process.env.SLACK_BOT_TOKEN!,
  receiver,
  logLevel: LogLevel.ERROR,
  ...(process.env.SLACK_API_URL ? { clientOptions: { slackApiUrl: process.env.SLACK_API_URL } } : {}),
});
app.event('app_mention', async () => undefined);

const server = await receiver.start({ port: 0, host: '127.0.0.1' });
const address = server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.send?.({ type: 'ready', url: `http://127.0.0.1:${port}`, startBotMs: 0 });
process.on('SIGTERM', () => process.exit(0));
process.on('disconnect', () => process.exit(0));
process.on('message', (raw) => {
  const m = raw as { type: string; id: number; command: string };
  if (m.type === 'command') process.send?.({ type: 'reply', id: m.id, value: m.command === 'memory' ? process.memoryUsage() : null });
});
