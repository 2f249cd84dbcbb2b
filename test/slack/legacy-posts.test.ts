// After an upgrade: posts stored as blocks by an earlier version, and blocks a tool stored with a turn
// in flight, still deliver, click once and retire correctly.
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partsFromStored } from '../../src/agent/reply.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { createSlackClients, SlackPoster } from '../../src/slack/poster.js';
import { claimButtonClick, grantOfTrigger } from '../../src/store/button-choices.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { appendMessage, listMessages } from '../../src/store/messages.js';
import { createPost } from '../../src/store/posts.js';
import { getTriggerWithChat } from '../../src/store/chats.js';
import { startFakeSlack, type FakeMessage, type FakeSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';

const TEAM = 'T0LEGACY';
const CHANNEL = 'C0LEGACY';
let handle: DbHandle;
let slack: FakeSlack;
let poster: SlackPoster;
let thread = 0;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('legacy_posts'), { max: 4 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
  slack = await startFakeSlack();
  const logger = pino({ level: 'silent' });
  poster = new SlackPoster(handle.db, createSlackClients('xoxb-test', slack.apiUrl, logger), logger);
});
afterAll(async () => {
  await handle.close();
  await slack.stop();
});

/** The grant values exactly as versions before typed replies wrote them (JSON.stringify, their key order). */
const oldTrainValue = JSON.stringify({ kind: 'next', action: { action: 'train_on_failures', runId: 'run_1', modelId: 'm', heldOutFraction: 0, augmentation: 5 } });
const oldApproveValue = JSON.stringify({ kind: 'approve', intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' }, credits: 60 });
const oldBlocks = [
  { type: 'section', text: { type: 'mrkdwn', text: '<@UOWNER> Result of run_1.' } },
  { type: 'actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'Train on failures of run_1' }, action_id: ACTION_IDS.nextStep, value: oldTrainValue }] },
  { type: 'actions', elements: [{ type: 'button', style: 'primary', text: { type: 'plain_text', text: 'Approve 60 credits' }, action_id: ACTION_IDS.approve, value: oldApproveValue }] },
];

async function newChat() {
  thread += 1;
  return handle.db
    .insertInto('chats')
    .values({ team_id: TEAM, channel_id: CHANNEL, thread_ts: `1733150000.${String(thread).padStart(6, '0')}`, owner_user_id: 'UOWNER' })
    .returningAll()
    .executeTakeFirstOrThrow();
}

const postedIn = (threadTs: string): FakeMessage[] => slack.messages(CHANNEL, threadTs);

async function click(messageTs: string, button: { action_id: string; value: string }) {
  return claimButtonClick(handle.db, { teamId: TEAM, channelId: CHANNEL, messageTs, actionId: button.action_id, value: button.value, userId: 'UOWNER' }, { adminUserIds: [] });
}

const buttonsOf = (message: FakeMessage) =>
  (message.blocks as Array<{ type: string; elements?: Array<{ action_id: string; value: string; text: { text: string } }> }>).flatMap((b) => (b.type === 'actions' ? b.elements! : []));

describe('rows stored before typed replies', () => {
  it('a post stored as blocks, with the grants stored then, is delivered as it was, clicked once and retired', async () => {
    const chat = await newChat();
    // What the earlier version wrote in one transaction: the post, one choice per actions block, one grant per button.
    const post = await handle.db
      .insertInto('posts')
      .values({ team_id: TEAM, chat_id: chat.id, turn_id: null, post_key: `legacy:${chat.id}`, channel_id: CHANNEL, thread_ts: chat.thread_ts, payload: JSON.stringify({ text: '<@UOWNER> Result of run_1.', blocks: oldBlocks }) })
      .returningAll()
      .executeTakeFirstOrThrow();
    for (const [blockIndex, value, label, actionId] of [[1, oldTrainValue, 'Train on failures of run_1', ACTION_IDS.nextStep], [2, oldApproveValue, 'Approve 60 credits', ACTION_IDS.approve]] as const) {
      await sql`
        with choice as (insert into button_choices (team_id, chat_id, post_id, block_index) values (${TEAM}, ${chat.id}::bigint, ${post.id}::bigint, ${blockIndex}) returning id)
        insert into button_grants (team_id, choice_id, post_id, action_id, label, value, "grant")
        select ${TEAM}, choice.id, ${post.id}::bigint, ${actionId}, ${label}, ${value}, ${value}::jsonb from choice`.execute(handle.db);
    }

    await poster.deliverPending(TEAM, chat.id);
    const [message] = postedIn(chat.thread_ts);
    expect(message).toBeDefined();
    expect(message!.text).toBe('<@UOWNER> Result of run_1.');
    expect(message!.blocks).toEqual(oldBlocks);

    const approve = buttonsOf(message!).find((b) => b.action_id === ACTION_IDS.approve)!;
    const claimed = await click(message!.ts, approve);
    expect(claimed.outcome).toBe('claimed');
    const trigger = (await getTriggerWithChat(handle.db, (claimed as { triggerId: string }).triggerId))!.trigger;
    expect(await grantOfTrigger(handle.db, trigger)).toEqual(JSON.parse(oldApproveValue));
    expect((await click(message!.ts, approve)).outcome).toBe('already');

    await poster.refreshChoices(TEAM, post.id);
    const updated = postedIn(chat.thread_ts)[0]!;
    expect(updated.updates).toBe(1);
    const blocks = updated.blocks as Array<{ type: string }>;
    expect(blocks.map((b) => b.type)).toEqual(['section', 'actions', 'context']);
    expect(JSON.stringify(blocks[2])).toContain('<@UOWNER> chose *Approve 60 credits*');
    expect(buttonsOf(updated).map((b) => b.value)).toEqual([oldTrainValue]);
  });

  it('blocks a tool stored with a turn in flight become the reply\'s parts: its buttons are offered, clicked once and retired', async () => {
    const chat = await newChat();
    // The tool result an earlier version stored: Block Kit in messages.attachments.
    await handle.db
      .insertInto('messages')
      .values({ team_id: TEAM, chat_id: chat.id, turn_id: null, role: 'user', content: JSON.stringify([]), attachments: JSON.stringify(oldBlocks.slice(1)) })
      .execute();
    // And one a tool of this version stores: typed parts.
    await appendMessage(handle.db, { teamId: TEAM, chatId: chat.id, turnId: null, role: 'user', content: [], parts: [{ kind: 'retry', triggerId: '99' }] });
    const parts = (await listMessages(handle.db, TEAM, chat.id)).flatMap((row) => partsFromStored(row.attachments));
    expect(parts.map((p) => p.kind)).toEqual(['legacy_blocks', 'retry']);

    const post = await createPost(handle.db, { teamId: TEAM, chatId: chat.id, turnId: null, postKey: `reply:${chat.id}`, channelId: CHANNEL, threadTs: chat.thread_ts, reply: { to: 'UOWNER', text: 'Result of run_1.', parts } });
    const grants = await handle.db.selectFrom('button_grants').select(['action_id', 'value', 'grant']).where('post_id', '=', post.id).orderBy('id').execute();
    expect(grants.map((g) => g.action_id)).toEqual([ACTION_IDS.nextStep, ACTION_IDS.approve, ACTION_IDS.retry]);
    expect(grants[1]!.grant).toEqual(JSON.parse(oldApproveValue));

    await poster.deliverPending(TEAM, chat.id);
    const [message] = postedIn(chat.thread_ts);
    const buttons = buttonsOf(message!);
    expect(buttons.map((b) => [b.action_id, b.value])).toEqual(grants.map((g) => [g.action_id, g.value]));
    expect(buttons.find((b) => b.action_id === ACTION_IDS.approve)!.text.text).toBe('Approve 60 credits');

    const train = buttons.find((b) => b.action_id === ACTION_IDS.nextStep)!;
    expect((await click(message!.ts, train)).outcome).toBe('claimed');
    // The message carries the canonical value; the earlier version's spelling of it is not what was posted: refused.
    expect(buttons[1]!.value).not.toBe(oldApproveValue);
    expect((await click(message!.ts, { action_id: ACTION_IDS.approve, value: oldApproveValue })).outcome).toBe('tampered');
    await poster.refreshChoices(TEAM, post.id);
    const updated = postedIn(chat.thread_ts)[0]!;
    expect(JSON.stringify(updated.blocks)).toContain('<@UOWNER> chose *Train on failures of run_1*');
    expect(buttonsOf(updated).map((b) => b.action_id)).toEqual([ACTION_IDS.approve, ACTION_IDS.retry]);
  });
});
