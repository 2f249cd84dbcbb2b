// The live plan's poll: rescheduled while a step runs, and, with the poll off, only when a write had to wait.
import { sql } from 'kysely';
import { pino } from 'pino';
import type { JobHelpers, Task } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlanProgress } from '../../src/jobs/plan-progress.js';
import { PLAN_PROGRESS_TASK } from '../../src/jobs/task-names.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import type { PlanSyncResult } from '../../src/slack/plan-message.js';
import type { Chat } from '../../src/store/tables.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createTestDatabase } from '../kit/database.js';

const TEAM = 'T0POLL';
let handle: DbHandle;
let chat = 0;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('plan_poll'), { max: 4 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(() => handle.close());

/** Runs the plan task once for a new chat whose sync answers `result`; returns the polls queued for that chat. */
async function runOnce(result: PlanSyncResult, poll: boolean | undefined): Promise<number> {
  chat += 1;
  const chatId = `chat-${chat}`;
  const { tasks } = createPlanProgress({ db: handle.db, logger: pino({ level: 'silent' }), sync: async () => result, ...(poll === undefined ? {} : { poll }) });
  await (tasks[PLAN_PROGRESS_TASK] as Task)({ teamId: TEAM, chatId }, {} as JobHelpers);
  const rows = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs where key = ${`plan-poll:${TEAM}:${chatId}`}`.execute(handle.db);
  return rows.rows[0]!.n;
}

describe('the plan poll', () => {
  it('while a step runs, the sync is scheduled again', async () => {
    expect(await runOnce({ outcome: 'unchanged', againInMs: 3_000 }, undefined)).toBe(1);
    expect(await runOnce({ outcome: 'updated', againInMs: 3_000 }, true)).toBe(1);
  });

  it('nothing running: no poll', async () => {
    expect(await runOnce({ outcome: 'updated' }, undefined)).toBe(0);
  });

  it('with the poll off, a running step schedules nothing, but a write that had to wait is still made later', async () => {
    expect(await runOnce({ outcome: 'unchanged', againInMs: 3_000 }, false)).toBe(0);
    expect(await runOnce({ outcome: 'updated', againInMs: 3_000 }, false)).toBe(0);
    expect(await runOnce({ outcome: 'paced', againInMs: 1_500 }, false)).toBe(1);
    expect(await runOnce({ outcome: 'rate_limited', againInMs: 30_000 }, false)).toBe(1);
  });

  it("runs on the chat's turn queue, so a poll never overlaps the chat's turns", async () => {
    expect(await runOnce({ outcome: 'unchanged', againInMs: 3_000 }, undefined)).toBe(1);
    const rows = await sql<{ queue_name: string }>`select queue_name from graphile_worker.jobs where key = ${`plan-poll:${TEAM}:chat-${chat}`}`.execute(handle.db);
    expect(rows.rows.map((r) => r.queue_name)).toEqual([`chat:chat-${chat}`]);
  });
});

describe("the sync at a turn's end", () => {
  const chatRow = (id: string) => ({ id, team_id: TEAM }) as unknown as Chat;
  const jobsOf = async (chatId: string) =>
    (await sql<{ key: string | null; queue_name: string }>`select key, queue_name from graphile_worker.jobs where task_identifier = ${PLAN_PROGRESS_TASK} and queue_name = ${`chat:${chatId}`} order by id`.execute(handle.db)).rows;

  it("runs in the turn itself, on the turn's chat: no job when nothing is running, a poll when a step is", async () => {
    const given: Array<Chat | undefined> = [];
    const progress = createPlanProgress({ db: handle.db, logger: pino({ level: 'silent' }), sync: async (_team, _chat, chat) => (given.push(chat), { outcome: 'posted' }) });
    const turnChat = chatRow('turn-end-1');
    await progress.afterTurn(turnChat);
    // The sync is given the turn's chat, as the turn holds it: nothing to read again.
    expect(given).toEqual([turnChat]);
    expect(await jobsOf('turn-end-1')).toEqual([]);
    const running = createPlanProgress({ db: handle.db, logger: pino({ level: 'silent' }), sync: async () => ({ outcome: 'updated', againInMs: 5_000 }) });
    await running.afterTurn(chatRow('turn-end-2'));
    expect(await jobsOf('turn-end-2')).toEqual([{ key: `plan-poll:${TEAM}:turn-end-2`, queue_name: 'chat:turn-end-2' }]);
  });

  it('a sync that fails (Slack or the platform down) is left to a job on the chat queue, which retries it', async () => {
    const progress = createPlanProgress({ db: handle.db, logger: pino({ level: 'silent' }), sync: async () => Promise.reject(new Error('socket hang up')) });
    await progress.afterTurn(chatRow('turn-end-3'));
    expect(await jobsOf('turn-end-3')).toEqual([{ key: null, queue_name: 'chat:turn-end-3' }]);
  });
});
