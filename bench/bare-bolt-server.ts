// Baselines for the ack bench: a bare Bolt app (HTTPReceiver, same signing, a no-op app_mention
// listener), or with BENCH_FLOOR_DATABASE_URL the floor of our guarantee: the same app doing one
// durable INSERT (synchronous commit, one per event, no batching) before it acks.
import { App, HTTPReceiver, LogLevel } from '@slack/bolt';
import pg from 'pg';

const floorUrl = process.env.BENCH_FLOOR_DATABASE_URL;
const pool = floorUrl ? new pg.Pool({ connectionString: floorUrl, max: 16 }) : undefined;
await pool?.query('create table if not exists bench_ack_floor (event_id text primary key, event jsonb not null)');

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
app.event('app_mention', async ({ body, event }) => {
  await pool?.query('insert into bench_ack_floor (event_id, event) values ($1, $2) on conflict do nothing', [body.event_id, JSON.stringify(event)]);
});

const server = await receiver.start({ port: 0, host: '127.0.0.1' });
const address = server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.send?.({ type: 'ready', url: `http://127.0.0.1:${port}`, startBotMs: 0 });
const exit = () => void (pool?.end() ?? Promise.resolve()).finally(() => process.exit(0));
process.on('SIGTERM', exit);
process.on('disconnect', exit);
process.on('message', (raw) => {
  const m = raw as { type: string; id: number; command: string };
  if (m.type === 'command') process.send?.({ type: 'reply', id: m.id, value: m.command === 'memory' ? process.memoryUsage() : null });
});
