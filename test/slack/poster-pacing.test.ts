// Posts to one channel keep Slack's pace of about one per second even when two bot processes
// (replicas sharing one Postgres) deliver them at the same moment.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSlackClients, SlackPoster } from '../../src/slack/poster.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createPost, reservePostSlot } from '../../src/store/posts.js';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';

const TEAM = 'T0FAKE';
let url: string;
let replicas: DbHandle[];
let slack: FakeSlack;

beforeAll(async () => {
  url = await createTestDatabase('poster_pacing');
  replicas = [createDb(url, { max: 4 }), createDb(url, { max: 4 })];
  await migrateToLatest(replicas[0]!.db);
  // Two posts to one channel less than 900 ms apart are recorded as a violation.
  slack = await startFakeSlack({ rateLimit: { max: 1, windowMs: 900 } });
});
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await slack.stop();
});

async function chatWithPost(db: DbHandle, channel: string, thread: string): Promise<string> {
  const chat = await db.db
    .insertInto('chats')
    .values({ team_id: TEAM, channel_id: channel, thread_ts: thread, owner_user_id: 'U1' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await createPost(db.db, { teamId: TEAM, chatId: chat.id, turnId: null, postKey: `reply:${thread}`, channelId: channel, threadTs: thread, reply: { to: 'U1', text: `answer in ${thread}`, parts: [] } });
  return chat.id;
}

describe('Slack post pacing', () => {
  it('two replicas posting to one channel at once keep one post per second there', async () => {
    const logger = pino({ level: 'silent' });
    const posters = replicas.map((r) => new SlackPoster(r.db, createSlackClients('xoxb-test', slack.apiUrl, logger), logger));
    const chats: { replica: number; chatId: string }[] = [];
    for (let i = 0; i < 4; i += 1) chats.push({ replica: i % 2, chatId: await chatWithPost(replicas[i % 2]!, 'C0PACE', `1733150000.00010${i}`) });
    // Another channel is not held back by this one.
    chats.push({ replica: 1, chatId: await chatWithPost(replicas[1]!, 'C0OTHER', '1733150000.000200') });

    await Promise.all(chats.map(({ replica, chatId }) => posters[replica]!.deliverPending(TEAM, chatId)));

    const posted = slack.calls.filter((c) => c.method === 'chat.postMessage' && c.status === 200);
    expect(posted).toHaveLength(5);
    expect(slack.violations).toEqual([]);
    const times = posted.filter((c) => c.args.channel === 'C0PACE').map((c) => c.at);
    for (let i = 1; i < times.length; i += 1) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(900);
    const other = posted.find((c) => c.args.channel === 'C0OTHER')!;
    expect(other.at - times[0]!).toBeLessThan(900);
  });

  it('reserves distinct slots, one interval apart, for concurrent callers', async () => {
    const waits = await Promise.all(Array.from({ length: 6 }, (_, i) => reservePostSlot(replicas[i % 2]!.db, TEAM, 'C0SLOTS', 1000)));
    const sorted = [...waits].sort((a, b) => a - b);
    expect(sorted[0]).toBeLessThan(100);
    for (let i = 1; i < sorted.length; i += 1) expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThan(900);
  });
});
