// A delivered post's permalink: asked of Slack for a workspace's first post, then formed on the
// origin Slack gave, exactly as chat.getPermalink would answer, with no call and no second write.
import { WebClient } from '@slack/web-api';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSlackClients, messagePermalink, SlackPoster } from '../../src/slack/poster.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createPost } from '../../src/store/posts.js';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';

const TEAM = 'T0FAKE';
let handle: DbHandle;
let slack: FakeSlack;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('poster_permalinks'), { max: 4 });
  await migrateToLatest(handle.db);
  slack = await startFakeSlack();
});
afterAll(async () => {
  await handle.close();
  await slack.stop();
});

async function chatWithPost(channel: string, thread: string): Promise<{ chatId: string; postId: string }> {
  const chat = await handle.db
    .insertInto('chats')
    .values({ team_id: TEAM, channel_id: channel, thread_ts: thread, owner_user_id: 'U1' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const post = await createPost(handle.db, { teamId: TEAM, chatId: chat.id, turnId: null, postKey: `reply:${thread}`, channelId: channel, threadTs: thread, reply: { to: 'U1', text: `answer in ${thread}`, parts: [] } });
  return { chatId: chat.id, postId: post.id };
}

describe('post permalinks', () => {
  it("asks Slack once per workspace, then forms each post's permalink as Slack would give it", async () => {
    const logger = pino({ level: 'silent' });
    const poster = new SlackPoster(handle.db, createSlackClients('xoxb-test', slack.apiUrl, logger), logger);
    const threads = [
      { channel: 'C0LINKA', thread: '1733150000.000100' },
      { channel: 'C0LINKB', thread: '1733150000.000200' },
      { channel: 'C0LINKA', thread: '1733150000.000300' },
    ];
    const posts = [];
    for (const t of threads) {
      const created = await chatWithPost(t.channel, t.thread);
      await poster.deliverPending(TEAM, created.chatId);
      posts.push(created);
    }
    expect(slack.callsTo('chat.getPermalink')).toHaveLength(1);
    const client = new WebClient('xoxb-test', { slackApiUrl: slack.apiUrl });
    for (const { postId } of posts) {
      const row = await handle.db.selectFrom('posts').select(['channel_id', 'slack_ts', 'permalink']).where('id', '=', postId).executeTakeFirstOrThrow();
      const asked = await client.chat.getPermalink({ channel: row.channel_id, message_ts: row.slack_ts! });
      expect(row.permalink).toBe(asked.permalink);
      expect(row.permalink).toContain('?thread_ts=');
    }
  });

  it("has chat.getPermalink's two forms: a thread reply's link carries thread_ts and cid, a message of its own's does not", () => {
    const origin = 'https://ghostbusters.slack.com';
    expect(messagePermalink(origin, 'C1H9RESGL', '1358546517.000023', '1358546515.000008')).toBe(
      'https://ghostbusters.slack.com/archives/C1H9RESGL/p1358546517000023?thread_ts=1358546515.000008&cid=C1H9RESGL',
    );
    expect(messagePermalink(origin, 'C1H9RESGA', '1358546515.000008', '1358546515.000008')).toBe('https://ghostbusters.slack.com/archives/C1H9RESGA/p1358546515000008');
  });
});
