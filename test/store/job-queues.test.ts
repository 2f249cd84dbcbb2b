// Empty chat job queues removed on a real Postgres (migration 2026-12-07-001): only those no job
// holds, and never one an enqueue is putting a job into at that moment.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { enqueueScopedJob, removeEmptyChatQueues } from '../../src/store/job-queues.js';
import { enqueueSlackTriggers, enqueueTrigger } from '../../src/store/triggers.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
const hex = () => randomBytes(4).toString('hex');

beforeAll(async () => {
  handle = createDb(await createTestDatabase('job_queues'), { max: 12 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(() => handle.close());

/** Finishes every job of these chats (their turns', and their plans' with `teamId`) as graphile-worker completes one: the job deleted, its queue unlocked. */
async function finishJobs(chatIds: string[], teamId?: string): Promise<void> {
  const queues = [...chatIds.map((id) => `chat:${id}`), ...(teamId ? chatIds.map((id) => `plan:${teamId}:${id}`) : [])];
  await sql`
    with j as (
      delete from graphile_worker._private_jobs jobs
      using graphile_worker._private_job_queues q
      where q.id = jobs.job_queue_id and q.queue_name = any(${queues}::text[])
      returning jobs.job_queue_id
    )
    update graphile_worker._private_job_queues q set locked_at = null, locked_by = null where q.id in (select job_queue_id from j)`.execute(handle.db);
}

async function queueNames(): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select queue_name as name from graphile_worker._private_job_queues order by 1`.execute(handle.db);
  return rows.map((row) => row.name);
}

const threads = new Map<string, string>();

async function newChat(teamId: string): Promise<string> {
  const ts = `17331${Math.floor(Math.random() * 1e5)}.${hex()}`;
  const result = await enqueueTrigger(
    handle.db,
    { create: true, channelId: 'CQ', threadTs: ts, ownerUserId: 'UOWNER' },
    { teamId, kind: 'mention', dedupeKey: `msg:CQ:${ts}`, userId: 'UOWNER', payload: { text: 'hello', ts } },
  );
  threads.set(result!.chatId, ts);
  return result!.chatId;
}

describe('removeEmptyChatQueues', () => {
  it("removes the chat queues and the live plan's queues no job holds, and keeps a queue with a job waiting, a locked queue and the other queues", async () => {
    const teamId = `T${hex().toUpperCase()}`;
    const [done, running, waiting] = [await newChat(teamId), await newChat(teamId), await newChat(teamId)];
    await finishJobs([done, running]);
    // A job running in this queue: graphile-worker locks the queue for as long as it runs.
    await sql`update graphile_worker._private_job_queues set locked_at = now(), locked_by = 'worker-1' where queue_name = ${`chat:${running}`}`.execute(handle.db);
    const plan = `plan:${teamId}:${done}`;
    await enqueueScopedJob(handle.db, { identifier: 'plan_progress', payload: { teamId, chatId: done }, queueName: plan, maxAttempts: 5 });
    await enqueueScopedJob(handle.db, { identifier: 'other_task', payload: {}, queueName: `other:${teamId}`, maxAttempts: 1 });
    const { rows: scoped } = await sql<{ queue: string; key: string | null }>`
      select q.queue_name as queue, j.key from graphile_worker._private_jobs j join graphile_worker._private_job_queues q on q.id = j.job_queue_id
      where q.queue_name in (${plan}, ${`other:${teamId}`}) order by 1`.execute(handle.db);
    expect(scoped).toEqual([{ queue: `other:${teamId}`, key: null }, { queue: plan, key: null }]);
    await sql`delete from graphile_worker._private_jobs j using graphile_worker._private_job_queues q
      where q.id = j.job_queue_id and q.queue_name in (${plan}, ${`other:${teamId}`})`.execute(handle.db);

    expect(await removeEmptyChatQueues(handle.db)).toBe(2);
    const names = await queueNames();
    expect(names).not.toContain(`chat:${done}`);
    expect(names).not.toContain(plan);
    expect(names).toEqual(expect.arrayContaining([`chat:${running}`, `chat:${waiting}`, `other:${teamId}`]));
    expect(await removeEmptyChatQueues(handle.db)).toBe(0);

    // The chat whose queue went away gets a new one with its next message.
    const again = await enqueueTrigger(handle.db, { chatId: done }, { teamId, kind: 'reply', dedupeKey: `msg:CQ:again-${hex()}`, userId: 'UOWNER', payload: { text: 'more' } });
    expect(again?.created).toBe(true);
    expect(await queueNames()).toContain(`chat:${done}`);
  });

  it('removes them in batches, as many rounds as asked', async () => {
    const teamId = `T${hex().toUpperCase()}`;
    const chats = await Promise.all(Array.from({ length: 12 }, () => newChat(teamId)));
    await finishJobs(chats);
    expect(await removeEmptyChatQueues(handle.db, { batch: 5, rounds: 2 })).toBe(10);
    expect(await removeEmptyChatQueues(handle.db, { batch: 5 })).toBe(2);
  });

  it('never loses a turn job, nor leaves one in a queue that is gone, when messages arrive in threads whose queues it is removing', async () => {
    const teamId = `T${hex().toUpperCase()}`;
    const chats = await Promise.all(Array.from({ length: 30 }, () => newChat(teamId)));
    let removedDuringEnqueues = 0;
    for (let round = 0; round < 8; round += 1) {
      await finishJobs(chats, teamId);
      let enqueuing = true;
      const collector = (async () => {
        while (enqueuing) removedDuringEnqueues += await removeEmptyChatQueues(handle.db, { batch: 3, rounds: 1, busyWaitMs: 0 });
      })();
      // Both ways turn jobs are enqueued: the Slack ingest's quiet batch, and one notifying enqueue.
      await Promise.all(
        chats.flatMap((chatId, i) => [
          enqueueSlackTriggers(handle.db, [
            { target: { create: false, channelId: 'CQ', threadTs: threads.get(chatId)! }, input: { teamId, kind: 'reply', dedupeKey: `msg:CQ:${round}-${i}-a`, userId: 'UOWNER', payload: { text: 'a' } } },
          ]),
          enqueueTrigger(handle.db, { chatId }, { teamId, kind: 'reply', dedupeKey: `msg:CQ:${round}-${i}-b`, userId: 'UOWNER', payload: { text: 'b' } }),
          // The live plan's poll of the chat, keyed: one per chat and round.
          enqueueScopedJob(handle.db, {
            identifier: 'plan_progress',
            payload: { teamId, chatId },
            queueName: `plan:${teamId}:${chatId}`,
            jobKey: `plan-poll:${teamId}:${chatId}:${round}`,
            jobKeyMode: 'replace',
            runAt: new Date(Date.now() + 3_600_000),
            maxAttempts: 5,
          }),
        ]),
      );
      enqueuing = false;
      await collector;
    }
    // The race was run: queues were removed while the enqueues went on.
    expect(removedDuringEnqueues).toBeGreaterThan(0);
    const { rows } = await sql<{ trigger_id: string; chat_id: string; jobs: number; queued_in_own_chat: number }>`
      select t.id::text as trigger_id, t.chat_id::text as chat_id,
        (select count(*)::int from graphile_worker._private_jobs j where j.key = 'trigger:' || t.id) as jobs,
        (select count(*)::int from graphile_worker._private_jobs j join graphile_worker._private_job_queues q on q.id = j.job_queue_id
          where j.key = 'trigger:' || t.id and q.queue_name = 'chat:' || t.chat_id) as queued_in_own_chat
      from triggers t where t.team_id = ${teamId} and t.kind = 'reply'`.execute(handle.db);
    const { rows: polls } = await sql<{ key: string; queue: string | null }>`
      select j.key, q.queue_name as queue from graphile_worker._private_jobs j
      left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
      where j.key like ${`plan-poll:${teamId}:%`}`.execute(handle.db);
    // The last round's polls are still waiting (earlier rounds' were finished above).
    expect(polls.length).toBe(chats.length);
    expect(polls.filter((poll) => poll.queue !== `plan:${teamId}:${poll.key.split(':')[2]}`)).toEqual([]);
    // The jobs of the last round are still waiting (earlier rounds' were finished above).
    const lastRound = rows.filter((row) => row.jobs > 0 || row.queued_in_own_chat > 0);
    expect(rows.filter((row) => row.jobs !== row.queued_in_own_chat)).toEqual([]);
    expect(lastRound.length).toBe(chats.length * 2);
  });
});
