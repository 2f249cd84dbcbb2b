// A click decided in Postgres: the first allowed click on an offered button claims its choice, once,
// across concurrent clicks and replicas; every other click changes nothing.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import type { ButtonGrant, Reply } from '../../src/agent/reply.js';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { encodeButtonValue } from '../../src/slack/button-value.js';
import { claimButtonClick, grantOfTrigger, madeChoices, type ButtonClick } from '../../src/store/button-choices.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createPost, markPostDelivered, startPostAttempt } from '../../src/store/posts.js';
import { getTriggerWithChat } from '../../src/store/chats.js';
import { createTestDatabase } from '../kit/database.js';

let url: string;
let handle: DbHandle;
let replica: DbHandle;
const db = () => handle.db;
const hex = () => randomBytes(4).toString('hex');
const admins = { adminUserIds: ['UADMIN'] };

beforeAll(async () => {
  url = await createTestDatabase('buttons');
  handle = createDb(url, { max: 8 });
  replica = createDb(url, { max: 8 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(async () => {
  await handle.close();
  await replica.close();
});

const trainGrant = (runId: string): ButtonGrant => ({ kind: 'next', action: { action: 'train_on_failures', runId, modelId: 'm', heldOutFraction: 0, augmentation: 5 } });
const trainValue = (runId: string) => encodeButtonValue(trainGrant(runId));
const approveValue = (credits: number) => encodeButtonValue({ kind: 'approve', intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' }, credits });

/** A thread with one delivered post offering three next steps and an approve button. */
async function seedThread(teamId = `T${hex().toUpperCase()}`, options: { deliver?: boolean } = {}) {
  const threadTs = `1733150000.${hex()}`;
  const chat = await db()
    .insertInto('chats')
    .values({ team_id: teamId, channel_id: 'C1', thread_ts: threadTs, owner_user_id: 'UOWNER' })
    .returningAll()
    .executeTakeFirstOrThrow();
  const reply: Reply = {
    to: 'UOWNER',
    text: 'Result',
    parts: [
      { kind: 'choices', options: ['run_1', 'run_2', 'run_3'].map((runId) => ({ label: `Train on failures of ${runId}`, grant: trainGrant(runId) })) },
      { kind: 'approval', intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' }, credits: 300 },
    ],
  };
  const post = await createPost(db(), { teamId, chatId: chat.id, turnId: null, postKey: `p:${hex()}`, channelId: 'C1', threadTs, reply });
  const messageTs = `1733150001.${hex()}`;
  if (options.deliver !== false) await markPostDelivered(db(), teamId, post.id, messageTs, null);
  const click = (over: Partial<ButtonClick> = {}): ButtonClick => ({
    teamId,
    channelId: 'C1',
    messageTs,
    threadTs,
    actionId: ACTION_IDS.nextStep,
    value: trainValue('run_1'),
    userId: 'UOWNER',
    ...over,
  });
  return { teamId, chat, post, messageTs, threadTs, click };
}

async function buttonTriggers(teamId: string) {
  return db().selectFrom('triggers').selectAll().where('team_id', '=', teamId).where('kind', '=', 'button').execute();
}

async function feedbackJobs(teamId: string): Promise<Array<{ kind: string; text?: string; user?: string }>> {
  const rows = await sql<{ payload: { kind: string; teamId: string; text?: string; user?: string } }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
    where k.identifier = 'button_feedback' and j.payload->>'teamId' = ${teamId} order by j.id`.execute(db());
  return rows.rows.map((r) => r.payload);
}

describe('button choices', () => {
  it('stores the grants a post offers with the post, from its typed parts, one row per choice', async () => {
    const { post } = await seedThread();
    const choices = await db().selectFrom('button_choices').selectAll().where('post_id', '=', post.id).orderBy('block_index').execute();
    expect(choices.map((c) => c.block_index)).toEqual([0, 1]);
    const grants = await db().selectFrom('button_grants').selectAll().where('post_id', '=', post.id).orderBy('id').execute();
    expect(grants.map((g) => g.action_id)).toEqual([ACTION_IDS.nextStep, `${ACTION_IDS.nextStep}:1`, `${ACTION_IDS.nextStep}:2`, ACTION_IDS.approve]);
    expect(grants[3]!.grant).toMatchObject({ kind: 'approve', credits: 300 });
    expect(grants.map((g) => g.value)).toEqual([trainValue('run_1'), trainValue('run_2'), trainValue('run_3'), approveValue(300)]);
    expect(grants.map((g) => g.label)).toEqual(['Train on failures of run_1', 'Train on failures of run_2', 'Train on failures of run_3', 'Approve 300 credits']);
  });

  it('lets exactly one of five concurrent clicks claim a choice, closing its sibling buttons too', async () => {
    const t = await seedThread();
    const clicks = [
      t.click(),
      t.click(),
      t.click({ actionId: `${ACTION_IDS.nextStep}:1`, value: trainValue('run_2') }),
      t.click({ userId: 'UADMIN' }),
      t.click({ actionId: `${ACTION_IDS.nextStep}:2`, value: trainValue('run_3') }),
    ];
    const results = await Promise.all(clicks.map((c) => claimButtonClick(db(), c, admins)));
    expect(results.filter((r) => r.outcome === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'already')).toHaveLength(4);
    const triggers = await buttonTriggers(t.teamId);
    expect(triggers).toHaveLength(1);
    // The trigger carries the stored grant's ids, never the click's value.
    expect(JSON.stringify(triggers[0]!.payload)).not.toContain('train_on_failures');
    const winner = results.find((r) => r.outcome === 'claimed')!;
    const grant = await grantOfTrigger(db(), (await getTriggerWithChat(db(), (winner as { triggerId: string }).triggerId))!.trigger);
    expect(grant).toMatchObject({ kind: 'next', action: { action: 'train_on_failures' } });
    const made = await madeChoices(db(), t.teamId, t.post.id);
    expect(made).toHaveLength(1);
    expect(made[0]!.choiceIndex).toBe(0);
    const jobs = await feedbackJobs(t.teamId);
    expect(jobs.filter((j) => j.kind === 'update')).toHaveLength(1);
    expect(jobs.filter((j) => j.kind === 'ephemeral').map((j) => j.text)).toEqual(Array(4).fill(expect.stringMatching(/^Already done by <@U(OWNER|ADMIN)>/)));

    // The other choice of the message (the approve button) is still open.
    const approve = await claimButtonClick(db(), t.click({ actionId: ACTION_IDS.approve, value: approveValue(300) }), admins);
    expect(approve.outcome).toBe('claimed');
    // A replay hours later: refused, nothing new stored.
    await sql`update button_choices set claimed_at = claimed_at - interval '3 hours' where post_id = ${t.post.id}`.execute(db());
    const replay = await claimButtonClick(db(), t.click(), admins);
    expect(replay).toMatchObject({ outcome: 'already', by: expect.stringMatching(/^U(OWNER|ADMIN)$/) });
    expect(await buttonTriggers(t.teamId)).toHaveLength(2);
  });

  it('decides a click sent to two replicas (two connection pools) once', async () => {
    for (let round = 0; round < 40; round += 1) {
      const t = await seedThread();
      const results = await Promise.all([claimButtonClick(db(), t.click(), admins), claimButtonClick(replica.db, t.click(), admins), claimButtonClick(replica.db, t.click(), admins), claimButtonClick(db(), t.click(), admins), claimButtonClick(db(), t.click(), { adminUserIds: [] })]);
      expect(results.filter((r) => r.outcome === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.outcome === 'already')).toHaveLength(4);
      expect(await buttonTriggers(t.teamId)).toHaveLength(1);
    }
  });

  it('does not let a person who may not spend consume the grant', async () => {
    const t = await seedThread();
    expect(await claimButtonClick(db(), t.click({ userId: 'USTRANGER' }), admins)).toEqual({ outcome: 'not_allowed', ownerUserId: 'UOWNER' });
    expect(await buttonTriggers(t.teamId)).toHaveLength(0);
    expect((await feedbackJobs(t.teamId)).at(-1)?.text).toMatch(/Only <@UOWNER>/);
    expect((await claimButtonClick(db(), t.click(), admins)).outcome).toBe('claimed');
  });

  it('refuses tampered, cross-thread and unknown clicks without consuming anything', async () => {
    const t = await seedThread();
    const other = await seedThread(t.teamId);
    const tampered = [
      t.click({ value: trainValue('run_9') }),
      t.click({ actionId: ACTION_IDS.approve, value: approveValue(2000) }),
      t.click({ value: approveValue(300) }),
      // The value of a button in another thread, sent on this thread's message.
      t.click({ value: JSON.stringify({ kind: 'next', action: { action: 'train_on_failures', runId: 'run_1', modelId: 'other', heldOutFraction: 0, augmentation: 5 } }) }),
    ];
    for (const click of tampered) expect((await claimButtonClick(db(), click, admins)).outcome).toBe('tampered');
    // This thread's message ts with the other thread's ts, or an action the message never offered.
    expect((await claimButtonClick(db(), t.click({ actionId: `${ACTION_IDS.approve}:1` }), admins)).outcome).toBe('not_offered');
    expect((await claimButtonClick(db(), t.click({ messageTs: '1.0' }), admins)).outcome).toBe('not_offered');
    expect((await claimButtonClick(db(), t.click({ teamId: 'TOTHER' }), admins)).outcome).toBe('not_offered');
    expect(await buttonTriggers(t.teamId)).toHaveLength(0);
    // A click on the other thread's message belongs to that thread's chat, whatever thread it claims.
    const cross = await claimButtonClick(db(), other.click({ threadTs: t.threadTs }), admins);
    expect(cross).toMatchObject({ outcome: 'claimed', chatId: other.chat.id });
    expect((await claimButtonClick(db(), t.click(), admins)).outcome).toBe('claimed');
  });

  it('waits for a delivery in flight: a click in the moment between Slack showing the message and the outbox recording its ts', async () => {
    const t = await seedThread(undefined, { deliver: false });
    await startPostAttempt(db(), { teamId: t.teamId, postId: t.post.id, channelId: t.post.channel_id }, 1000);
    const started = Date.now();
    const pending = claimButtonClick(db(), t.click(), admins);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await markPostDelivered(db(), t.teamId, t.post.id, t.messageTs, null);
    expect((await pending).outcome).toBe('claimed');
    expect(Date.now() - started).toBeLessThan(1500);
    // With no delivery in flight, an unknown message is refused at once.
    const unknown = Date.now();
    expect((await claimButtonClick(db(), t.click({ messageTs: '9.9' }), admins)).outcome).toBe('not_offered');
    expect(Date.now() - unknown).toBeLessThan(500);
  });
});
