// The reconcile sweep against the sandbox platform: finished work whose event never came is triggered once; running work waits.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileOverdue } from '../../src/jobs/reconcile.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { findResourceByPlatformId, upsertResource } from '../../src/store/resources.js';
import { startTestSandbox, waitForRun, type TestSandbox } from '../platform/helpers.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
let sandbox: TestSandbox;
beforeAll(async () => {
  handle = createDb(await createTestDatabase('sweep'));
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
  // Runs of benchmark 104 take about 6 s here: one can be seen running, another waited for.
  sandbox = await startTestSandbox({ timeScale: 0.1 });
}, 60_000);
afterAll(async () => {
  await sandbox?.sandbox.stop();
  await handle?.close();
});

describe('the reconcile sweep', () => {
  it('triggers a finished run once, leaves a running one for later, and survives a resource the platform cannot read', async () => {
    const chat = await handle.db.insertInto('chats').values({ team_id: 'T1', channel_id: 'C1', thread_ts: '1.1', owner_user_id: 'U1' }).returning('id').executeTakeFirstOrThrow();
    const launch = (key: string) => sandbox.platform.launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, key);
    const finished = await launch(`sweep-done-${Date.now()}`);
    await waitForRun(sandbox.platform, finished.id, 30_000);
    const running = await launch(`sweep-running-${Date.now()}`);
    const record = (platformId: string) =>
      upsertResource(handle.db, { teamId: 'T1', chatId: chat.id, turnId: null, kind: 'run', platformId, planStep: null, status: 'queued', priceEstimate: 5, webUrl: null });
    await record(finished.id);
    await record(running.id);
    await record('run_never_existed');

    const logger = pino({ level: 'silent' });
    const sweep = () => reconcileOverdue({ db: handle.db, platform: sandbox.platform, logger, overdueSeconds: 0, eventRetryAttempts: 3 });
    expect(await sweep()).toEqual({ checked: 3, triggered: 1 });
    const triggers = await handle.db.selectFrom('triggers').selectAll().where('chat_id', '=', chat.id).execute();
    expect(triggers).toEqual([expect.objectContaining({ kind: 'reconcile', payload: { type: 'run.completed', resourceKind: 'run', resourceId: finished.id } })]);
    expect((await findResourceByPlatformId(handle.db, 'run', finished.id))!.notified_at).not.toBeNull();
    const stillRunning = (await findResourceByPlatformId(handle.db, 'run', running.id))!;
    expect(stillRunning.notified_at).toBeNull();
    expect(['queued', 'running']).toContain(stillRunning.status);

    // The finished run is not looked at again; the others are, and nothing new is triggered while they run.
    expect(await sweep()).toMatchObject({ checked: 2, triggered: 0 });
    await waitForRun(sandbox.platform, running.id, 30_000);
    expect(await sweep()).toMatchObject({ checked: 2, triggered: 1 });
    expect(await handle.db.selectFrom('triggers').select('id').where('chat_id', '=', chat.id).execute()).toHaveLength(2);
  });
});
