// Slack mentions and thread replies stored in batches on a real Postgres: chats, one trigger and one job each, redeliveries.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createGroupCommit } from '../../src/store/group-commit.js';
import { enqueueSlackTriggers, type EnqueueResult, type SlackTriggerInput } from '../../src/store/triggers.js';
import { waitUntil } from '../kit/wait.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
let databaseUrl: string;
const hex = () => randomBytes(4).toString('hex');

beforeAll(async () => {
  databaseUrl = await createTestDatabase('slack_ingest');
  handle = createDb(databaseUrl, { max: 6 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(() => handle.close());

function mention(teamId: string, channelId: string, ts: string, threadTs = ts): SlackTriggerInput {
  return {
    target: { create: true, channelId, threadTs, ownerUserId: 'UOWNER' },
    input: { teamId, kind: 'mention', dedupeKey: `msg:${channelId}:${ts}`, userId: 'UOWNER', payload: { text: 'hello', ts } },
  };
}

function reply(teamId: string, channelId: string, ts: string, threadTs: string): SlackTriggerInput {
  return {
    target: { create: false, channelId, threadTs },
    input: { teamId, kind: 'reply', dedupeKey: `msg:${channelId}:${ts}`, userId: 'UOTHER', payload: { text: 'and then?', ts } },
  };
}

async function jobsOf(teamId: string): Promise<Array<{ queue: string; trigger: string }>> {
  const rows = await sql<{ queue: string; trigger: string }>`
    select q.queue_name as queue, j.payload->>'triggerId' as trigger
    from graphile_worker._private_jobs j
    join graphile_worker._private_job_queues q on q.id = j.job_queue_id
    where (j.payload->>'triggerId')::bigint in (select id from triggers where team_id = ${teamId})
    order by j.id`.execute(handle.db);
  return rows.rows;
}

describe('enqueueSlackTriggers', () => {
  it('stores a batch in one statement with the meaning of one enqueue per item', async () => {
    const teamId = `T${hex().toUpperCase()}`;
    const existing = await handle.db
      .insertInto('chats')
      .values({ team_id: teamId, channel_id: 'COLD', thread_ts: '1733150000.000100', owner_user_id: 'UOWNER' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const results = await enqueueSlackTriggers(handle.db, [
      mention(teamId, 'CNEW', '1733150001.000100'),
      // A reply in the thread the mention above opens, in the same batch.
      reply(teamId, 'CNEW', '1733150001.000200', '1733150001.000100'),
      // A reply in a thread no chat has: nothing stored.
      reply(teamId, 'CNONE', '1733150001.000300', '1733150001.000000'),
      // The same message twice (a redelivery inside the batch).
      mention(teamId, 'CDUP', '1733150001.000400'),
      mention(teamId, 'CDUP', '1733150001.000400'),
      // A mention in a thread that already has a chat.
      mention(teamId, 'COLD', '1733150001.000500', '1733150000.000100'),
    ]);
    const [opened, followUp, none, first, again, old] = results as [EnqueueResult, EnqueueResult, undefined, EnqueueResult, EnqueueResult, EnqueueResult];
    expect(opened.created).toBe(true);
    expect(followUp).toMatchObject({ created: true, chatId: opened.chatId });
    expect(none).toBeUndefined();
    expect(first.created).toBe(true);
    expect(again).toEqual({ chatId: first.chatId, triggerId: first.triggerId, created: false });
    expect(old).toMatchObject({ created: true, chatId: existing.id });

    const triggers = await handle.db.selectFrom('triggers').select(['id', 'chat_id', 'kind']).where('team_id', '=', teamId).orderBy('id').execute();
    expect(triggers).toHaveLength(4);
    const jobs = await jobsOf(teamId);
    // One job per stored trigger, in its chat's queue (turns of one thread run one at a time).
    expect(jobs.map((j) => j.trigger).sort()).toEqual(triggers.map((t) => t.id).sort());
    for (const trigger of triggers) expect(jobs.find((j) => j.trigger === trigger.id)?.queue).toBe(`chat:${trigger.chat_id}`);
    const chats = await handle.db.selectFrom('chats').select('channel_id').where('team_id', '=', teamId).execute();
    expect(chats.map((c) => c.channel_id).sort()).toEqual(['CDUP', 'CNEW', 'COLD']);
  });

  it('answers a redelivery after the commit with the stored trigger, and adds no job', async () => {
    const teamId = `T${hex().toUpperCase()}`;
    const [stored] = await enqueueSlackTriggers(handle.db, [mention(teamId, 'CRE', '1733150002.000100')]);
    const [redelivered] = await enqueueSlackTriggers(handle.db, [mention(teamId, 'CRE', '1733150002.000100')]);
    expect(redelivered).toEqual({ ...stored, created: false });
    expect(await jobsOf(teamId)).toHaveLength(1);
  });

  it('under group commit, concurrent events share statements and each gets its own result', async () => {
    const teamId = `T${hex().toUpperCase()}`;
    const statements: number[] = [];
    const ingest = createGroupCommit<SlackTriggerInput, EnqueueResult | undefined>({
      maxBatch: 64,
      maxInFlight: 2,
      flush: (items) => {
        statements.push(items.length);
        return enqueueSlackTriggers(handle.db, items);
      },
    });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => ingest.submit(mention(teamId, `CG${i}`, `1733150003.${String(i).padStart(6, '0')}`))));
    expect(statements.reduce((a, b) => a + b, 0)).toBe(40);
    expect(statements.length).toBeLessThan(40);
    expect(new Set(results.map((r) => r!.triggerId)).size).toBe(40);
    expect(results.every((r) => r!.created)).toBe(true);
    expect(await jobsOf(teamId)).toHaveLength(40);
  });

  it('two batches sharing threads in opposite orders, at once, many times: no deadlock, one chat per thread', async () => {
    const teamId = `T${hex().toUpperCase()}`;
    for (let round = 0; round < 20; round += 1) {
      const threads = Array.from({ length: 6 }, (_, i) => `1733150010.${String(round * 10 + i).padStart(6, '0')}`);
      const batch = (order: string[], tag: string) => order.map((thread) => mention(teamId, 'CLOCK', `${thread}${tag}`, thread));
      const [a, b] = await Promise.all([enqueueSlackTriggers(handle.db, batch(threads, '1')), enqueueSlackTriggers(handle.db, batch([...threads].reverse(), '2'))]);
      for (const results of [a, b]) expect(results.every((r) => r?.created)).toBe(true);
      // Both batches' mentions of a thread landed in its one chat.
      for (let i = 0; i < threads.length; i += 1) expect(a[i]!.chatId).toBe(b[threads.length - 1 - i]!.chatId);
      expect(new Set(a.map((r) => r!.chatId)).size).toBe(threads.length);
    }
    const chats = await handle.db.selectFrom('chats').select('thread_ts').where('team_id', '=', teamId).execute();
    expect(chats).toHaveLength(120);
  });

  it("adds each turn job with graphile-worker's add_job: its NOTIFY wakes the workers at the commit; task, chat queue, trigger key, payload, attempts", async () => {
    const listener = new pg.Client(databaseUrl);
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query('LISTEN "jobs:insert"');
    try {
      const teamId = `T${hex().toUpperCase()}`;
      const results = await enqueueSlackTriggers(handle.db, [mention(teamId, 'CQ1', '1733150009.000200'), mention(teamId, 'CQ2', '1733150009.000300')]);
      expect(results.every((r) => r?.created)).toBe(true);
      await waitUntil(() => (heard.length === 2 ? true : undefined), 5_000, "add_job's NOTIFY, one per job");
      const rows = await sql<{ task: string; queue: string; key: string; payload: unknown; max_attempts: number; chat: string; trigger: string }>`
        select t.identifier as task, q.queue_name as queue, j.key, j.payload, j.max_attempts, tr.chat_id::text as chat, tr.id::text as trigger
        from graphile_worker._private_jobs j
        join graphile_worker._private_tasks t on t.id = j.task_id
        join graphile_worker._private_job_queues q on q.id = j.job_queue_id
        join triggers tr on tr.id = (j.payload->>'triggerId')::bigint
        where tr.team_id = ${teamId} order by j.id`.execute(handle.db);
      expect(rows.rows).toHaveLength(2);
      for (const row of rows.rows) {
        expect(row).toEqual({ task: 'run_turn', queue: `chat:${row.chat}`, key: `trigger:${row.trigger}`, payload: { triggerId: row.trigger }, max_attempts: 25, chat: row.chat, trigger: row.trigger });
      }
    } finally {
      await listener.end();
    }
  });
});
