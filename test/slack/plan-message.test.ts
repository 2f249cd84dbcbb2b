// The plan message against a real Postgres and the fake Slack: posted once, rewritten only when what
// it shows changes and only at the pace, found again after a post whose answer was lost, and held
// back (as a rescheduled job, not a sleeping one) when the workspace's update slots are taken, each
// chat then waiting for a slot of its own.
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/agent/plan.js';
import type { Platform } from '@verdict/contract/platform';
import { PLAN_METADATA_TYPE, syncPlanMessage, type PlanMessengerDeps } from '../../src/slack/plan-message.js';
import { createSlackClients } from '../../src/slack/poster.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';

const TEAM = 'T0FAKE';
const CHANNEL = 'C0PLAN';
let handle: DbHandle;
let slack: FakeSlack;
let deps: PlanMessengerDeps;
let thread = 0;

/** No step of these plans is running, so nothing is read from the platform: any call is a bug. */
const noPlatform = new Proxy({}, { get: (_t, name) => () => Promise.reject(new Error(`unexpected platform call ${String(name)}`)) }) as Platform;

function plan(baseline: 'launched' | 'completed', trained: 'pending' | 'completed' = 'pending'): Plan {
  return {
    agreedBy: 'U1',
    agreedAt: '2026-12-05T08:00:00.000Z',
    benchmarkId: '104',
    baseModelId: 'qwen/Qwen2.5-0.5B-Instruct',
    augmentation: 5,
    heldOutFraction: 0,
    steps: [
      { kind: 'baseline_run', status: baseline, attempt: 1, ...(baseline === 'launched' ? {} : { runId: 'run_1' }) },
      { kind: 'train', status: trained, attempt: 1, ...(trained === 'completed' ? { datasetId: 'ds_1', trainingId: 'tr_1' } : {}) },
      { kind: 'trained_run', status: trained, attempt: 1 },
      { kind: 'compare', status: 'pending', attempt: 1 },
    ],
  };
}

async function newChat(p: Plan): Promise<{ chatId: string; threadTs: string }> {
  thread += 1;
  const threadTs = `1733150000.${String(thread).padStart(6, '0')}`;
  const row = await handle.db
    .insertInto('chats')
    .values({ team_id: TEAM, channel_id: CHANNEL, thread_ts: threadTs, owner_user_id: 'U1', plan: JSON.stringify(p) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { chatId: row.id, threadTs };
}

const setPlan = (chatId: string, p: Plan) => handle.db.updateTable('chats').set({ plan: JSON.stringify(p) }).where('id', '=', chatId).execute();
/** As if the last write was long ago: the pace is kept on the database's clock, so the test moves it instead of waiting. */
const ageLastWrite = (chatId: string) => sql`update plan_messages set written_at = written_at - interval '1 minute' where chat_id = ${chatId}`.execute(handle.db);
/** Syncs a chat that must wait: paced, rescheduled within (minMs, maxMs], nothing written to Slack. */
async function expectHeld(chatId: string, minMs: number, maxMs: number): Promise<number> {
  const updatesBefore = slack.callsTo('chat.update').length;
  const held = await syncPlanMessage(deps, TEAM, chatId);
  expect(held.outcome).toBe('paced');
  expect(held.againInMs).toBeGreaterThan(minMs);
  expect(held.againInMs).toBeLessThanOrEqual(maxMs);
  expect(slack.callsTo('chat.update').length).toBe(updatesBefore);
  return held.againInMs!;
}
/** The time held under a workspace pacing key of channel_post_slots (ms since the epoch). */
const slotTime = async (key: string) =>
  (await sql<{ t: Date }>`select last_slot as t from channel_post_slots where team_id = ${TEAM} and channel_id = ${key}`.execute(handle.db)).rows[0]!.t.getTime();
const planPosts = (threadTs: string) => slack.messages(CHANNEL, threadTs).filter((m) => m.metadata?.event_type === PLAN_METADATA_TYPE);

beforeAll(async () => {
  handle = createDb(await createTestDatabase('plan_message'), { max: 4 });
  await migrateToLatest(handle.db);
  slack = await startFakeSlack();
  const logger = pino({ level: 'silent' });
  deps = { db: handle.db, clients: createSlackClients('xoxb-test', slack.apiUrl, logger), platform: noPlatform, logger };
});
afterAll(async () => {
  await handle.close();
  await slack.stop();
});
beforeEach(async () => {
  // Each test starts with the workspace's update slot free.
  await sql`delete from channel_post_slots`.execute(handle.db);
});

describe('syncPlanMessage', () => {
  it('posts the plan once, skips a write that changes nothing, and rewrites it only after the pace', async () => {
    const { chatId, threadTs } = await newChat(plan('completed'));
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('posted');
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('unchanged');
    await setPlan(chatId, plan('completed', 'completed'));
    const paced = await syncPlanMessage(deps, TEAM, chatId);
    expect(paced.outcome).toBe('paced');
    expect(paced.againInMs).toBeGreaterThan(0);
    expect(paced.againInMs).toBeLessThanOrEqual(3000);
    expect(slack.callsTo('chat.update').filter((c) => c.args.channel === CHANNEL)).toHaveLength(0);
    await ageLastWrite(chatId);
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('updated');
    const states = slack.planStates({ threadTs });
    expect(states.map((s) => s.tasks.map((t) => t.status).join(','))).toEqual([
      'complete,in_progress,pending,pending,pending',
      'complete,complete,complete,complete,in_progress',
    ]);
    expect(planPosts(threadTs)).toHaveLength(1);
  });

  it('finds its message after a post whose answer was never recorded, instead of posting a second', async () => {
    const { chatId, threadTs } = await newChat(plan('completed'));
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('posted');
    // The process died between Slack's answer and the record of its ts.
    await sql`update plan_messages set slack_ts = null, state = null, written_at = null where chat_id = ${chatId}`.execute(handle.db);
    await setPlan(chatId, plan('completed', 'completed'));
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('updated');
    expect(planPosts(threadTs)).toHaveLength(1);
    const row = await handle.db.selectFrom('plan_messages').selectAll().where('chat_id', '=', chatId).executeTakeFirstOrThrow();
    expect(row.slack_ts).toBe(planPosts(threadTs)[0]!.ts);
    expect(row.post_attempts).toBe(2);
  });

  it('waits as a rescheduled job when the workspace update slots are taken, and writes nothing meanwhile', async () => {
    const { chatId } = await newChat(plan('completed'));
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('posted');
    await setPlan(chatId, plan('completed', 'completed'));
    await ageLastWrite(chatId);
    // Other chats of the workspace hold the slots for the next 30 s.
    await sql`insert into channel_post_slots (team_id, channel_id, last_slot) values (${TEAM}, '~plan-chat.update', clock_timestamp() + interval '30 seconds')
              on conflict (team_id, channel_id) do update set last_slot = excluded.last_slot`.execute(handle.db);
    await expectHeld(chatId, 25_000, 31_500);
  });

  it('many plans in one workspace each wait for their own slot, in order, and ask for it once', async () => {
    const chats = [await newChat(plan('completed')), await newChat(plan('completed')), await newChat(plan('completed'))];
    for (const c of chats) {
      expect((await syncPlanMessage(deps, TEAM, c.chatId)).outcome).toBe('posted');
      await setPlan(c.chatId, plan('completed', 'completed'));
      await ageLastWrite(c.chatId);
    }
    // Other chats of the workspace hold the slots for the next 30 s.
    await sql`insert into channel_post_slots (team_id, channel_id, last_slot) values (${TEAM}, '~plan-chat.update', clock_timestamp() + interval '30 seconds')
              on conflict (team_id, channel_id) do update set last_slot = excluded.last_slot`.execute(handle.db);
    const updatesBefore = slack.callsTo('chat.update').length;
    const waits: number[] = [];
    for (const c of chats) {
      const held = await syncPlanMessage(deps, TEAM, c.chatId);
      expect(held.outcome).toBe('paced');
      waits.push(held.againInMs!);
    }
    // One slot each, 1.5 s apart, after the held ones.
    expect(waits[0]).toBeGreaterThan(29_000);
    expect(waits[0]).toBeLessThanOrEqual(31_500);
    expect(waits[1]! - waits[0]!).toBeGreaterThan(1_300);
    expect(waits[2]! - waits[1]!).toBeGreaterThan(1_300);
    const reservedUpTo = await slotTime('~plan-chat.update');
    // Asked again before its slot (another event of its chat), a chat keeps its place: no new slot, no read, no write.
    const again = await syncPlanMessage(deps, TEAM, chats[1]!.chatId);
    expect(again.outcome).toBe('paced');
    expect(Math.abs(again.againInMs! - waits[1]!)).toBeLessThan(1_000);
    expect(await slotTime('~plan-chat.update')).toBe(reservedUpTo);
    expect(slack.callsTo('chat.update').length).toBe(updatesBefore);
    // Its slot comes (the clock is moved instead of waited for): it writes, and the reservation is used up.
    await sql`update plan_messages set slot_at = clock_timestamp() where chat_id = ${chats[1]!.chatId}`.execute(handle.db);
    expect((await syncPlanMessage(deps, TEAM, chats[1]!.chatId)).outcome).toBe('updated');
    expect(slack.callsTo('chat.update').length).toBe(updatesBefore + 1);
    const row = await handle.db.selectFrom('plan_messages').select('slot_at').where('chat_id', '=', chats[1]!.chatId).executeTakeFirstOrThrow();
    expect(row.slot_at).toBeNull();
    // A reservation its job never came back for (two minutes old) is given up: the chat queues again at the end.
    await sql`update plan_messages set slot_at = clock_timestamp() - interval '2 minutes' where chat_id = ${chats[2]!.chatId}`.execute(handle.db);
    const requeued = await syncPlanMessage(deps, TEAM, chats[2]!.chatId);
    expect(requeued.outcome).toBe('paced');
    expect(requeued.againInMs!).toBeGreaterThan(waits[2]!);
    expect(await slotTime('~plan-chat.update')).toBeGreaterThan(reservedUpTo);
  });

  it('a slot used late (its job waited for a worker) still keeps the workspace writes an interval apart', async () => {
    const { chatId } = await newChat(plan('completed'));
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('posted');
    await setPlan(chatId, plan('completed', 'completed'));
    await ageLastWrite(chatId);
    // Its slot passed 5 s ago, and another chat's write is (as the clock is set) 10 s ahead of now.
    await sql`insert into channel_post_slots (team_id, channel_id, last_slot) values (${TEAM}, '~plan-chat.update', clock_timestamp())`.execute(handle.db);
    await sql`insert into channel_post_slots (team_id, channel_id, last_slot) values (${TEAM}, '~plan-chat.update:written', clock_timestamp() + interval '10 seconds')`.execute(handle.db);
    await sql`update plan_messages set slot_at = clock_timestamp() - interval '5 seconds' where chat_id = ${chatId}`.execute(handle.db);
    await expectHeld(chatId, 10_000, 11_600);
    const updatesBefore = slack.callsTo('chat.update').length;
    // The last write is long enough ago: it writes on the slot it holds, without queueing again.
    await sql`update channel_post_slots set last_slot = clock_timestamp() - interval '1 minute' where channel_id = '~plan-chat.update:written'`.execute(handle.db);
    const queueEnd = await slotTime('~plan-chat.update');
    expect((await syncPlanMessage(deps, TEAM, chatId)).outcome).toBe('updated');
    expect(slack.callsTo('chat.update').length).toBe(updatesBefore + 1);
    expect(await slotTime('~plan-chat.update')).toBe(queueEnd);
  });

  it('a chat without a plan has no plan message', async () => {
    thread += 1;
    const row = await handle.db
      .insertInto('chats')
      .values({ team_id: TEAM, channel_id: CHANNEL, thread_ts: `1733150001.${String(thread).padStart(6, '0')}`, owner_user_id: 'U1', plan: null })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect((await syncPlanMessage(deps, TEAM, row.id)).outcome).toBe('no_plan');
  });
});
