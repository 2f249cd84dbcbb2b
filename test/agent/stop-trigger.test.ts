// The stop trigger against the sandbox platform and Postgres: durable before it cancels, finished
// when retried after a crash, one stop however many clicks, and the spend guard closed meanwhile.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeLaunch } from '../../src/agent/spend-guard.js';
import type { ToolContext } from '../../src/agent/tools/tool.js';
import { stopHandler, stopReplyText } from '../../src/agent/triggers/stop.js';
import type { TriggerContext } from '../../src/agent/triggers/index.js';
import { loadConfig } from '../../src/config.js';
import type { Platform } from '@verdict/contract/platform';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { claimStop } from '../../src/store/agent-sessions.js';
import { upsertResource } from '../../src/store/resources.js';
import type { Chat, Trigger } from '../../src/store/tables.js';
import { startTestSandbox, type TestSandbox } from '../platform/helpers.js';
import { createTestDatabase } from '../kit/database.js';

const config = loadConfig({ SLACK_BOT_TOKEN: 'xoxb-t', SLACK_SIGNING_SECRET: 's', ANTHROPIC_API_KEY: 'k', ADMIN_USER_IDS: 'UADMIN' });

describe('the stop trigger', () => {
  let handle: DbHandle;
  let sandbox: TestSandbox;
  beforeAll(async () => {
    handle = createDb(await createTestDatabase('stop_trigger'));
    await migrateToLatest(handle.db);
    // A run of benchmark 104 takes about 60 s here: still running when the stop comes.
    sandbox = await startTestSandbox({ timeScale: 1 });
  }, 60_000);
  afterAll(async () => {
    await sandbox?.sandbox.stop();
    await handle?.close();
  });

  const readChat = (id: string) => handle.db.selectFrom('chats').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  function context(chat: Chat, triggerId: string, userId: string, platform: Platform): TriggerContext {
    const trigger = { id: triggerId, team_id: 'T1', chat_id: chat.id, kind: 'stop', user_id: userId, payload: {}, dedupe_key: `stop:${triggerId}` } as unknown as Trigger;
    return { db: handle.db, config, logger: pino({ level: 'silent' }), platform, sandbox: true, chat, trigger } as unknown as TriggerContext;
  }

  it('refuses anyone but the owner or an admin', async () => {
    const chat = { id: '1', team_id: 'T1', owner_user_id: 'UOWNER' } as Chat;
    const ctx = (user: string) => context(chat, '1', user, sandbox.platform);
    expect(stopHandler.authorize(ctx('UOWNER'))).toBeUndefined();
    expect(stopHandler.authorize(ctx('UADMIN'))).toBeUndefined();
    expect(stopHandler.authorize(ctx('USTRANGER'))).toMatchObject({ code: 'stop_not_allowed', where: 'ephemeral', message: expect.stringContaining('Only <@UOWNER>') });
  });

  async function runningRunInChat(): Promise<{ chat: Chat; runId: string }> {
    const run = await sandbox.platform.launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, `stop-${Date.now()}-${Math.random()}`);
    const chat = await handle.db
      .insertInto('chats')
      .values({ team_id: 'T1', channel_id: 'C1', thread_ts: `1.${run.id}`, owner_user_id: 'UOWNER' })
      .returningAll()
      .executeTakeFirstOrThrow();
    await upsertResource(handle.db, { teamId: 'T1', chatId: chat.id, turnId: null, kind: 'run', platformId: run.id, planStep: null, status: 'queued', priceEstimate: run.priceCredits, webUrl: null });
    return { chat, runId: run.id };
  }

  it('reports a cancel the platform refuses, and leaves that run to finish', async () => {
    const { chat, runId } = await runningRunInChat();
    const down: Platform = { ...sandbox.platform, cancelRun: () => Promise.reject(new Error('platform unavailable')) };
    const prepared = await stopHandler.prepare(context(chat, '201', 'UOWNER', down));
    if (!('facts' in prepared)) throw new Error(`skipped: ${prepared.skip}`);
    expect(stopReplyText(prepared.facts)).toContain(`Run ${runId}: could not be cancelled (platform unavailable); it may still be working and charging`);
    expect((await sandbox.platform.getRun(runId)).status).not.toBe('cancelled');
    const resource = await handle.db.selectFrom('resources').selectAll().where('platform_id', '=', runId).executeTakeFirstOrThrow();
    expect(resource.finished_at).toBeNull();
  });

  it('is durable before it cancels: after a crash right after the stop was recorded, the retry finishes it', async () => {
    const { chat: row, runId } = await runningRunInChat();
    // The first thing the stop does, then the process dies.
    await claimStop(handle.db, 'T1', row.id, { userId: 'UOWNER', triggerId: '101' });
    const stopped = await readChat(row.id);
    expect(stopped).toMatchObject({ stopped_by: 'UOWNER', stop_trigger_id: '101' });
    expect(stopped.stopped_at).not.toBeNull();
    expect((await sandbox.platform.getRun(runId)).status).not.toBe('cancelled');
    // Meanwhile a platform event may launch nothing, even the next step of an agreed plan.
    const plan = { agreedBy: 'UOWNER', agreedAt: '2026-12-05T07:00:00.000Z', benchmarkId: '104', baseModelId: 'qwen/Qwen2.5-0.5B-Instruct', augmentation: 5, heldOutFraction: 0, steps: [{ kind: 'baseline_run', status: 'pending', attempt: 1 }] };
    const eventCtx = { ...context({ ...stopped, plan }, '103', 'UOWNER', sandbox.platform), trigger: { id: '103', team_id: 'T1', kind: 'platform_event', user_id: null }, authority: 'plan' } as unknown as ToolContext;
    const refused = await authorizeLaunch(eventCtx, { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, { credits: 0, availableCredits: 100 }, { toolUseId: 'tu_1' });
    expect(refused).toMatchObject({ allowed: false, code: 'spend_plan_closed' });
    const run = { id: runId };

    // A button offered in the thread and not chosen yet.
    const post = await handle.db
      .insertInto('posts')
      .values({ team_id: 'T1', chat_id: row.id, turn_id: null, post_key: `p:${row.id}`, channel_id: 'C1', thread_ts: row.thread_ts, payload: '{}' })
      .returning('id')
      .executeTakeFirstOrThrow();
    await handle.db.insertInto('button_choices').values({ team_id: 'T1', chat_id: row.id, post_id: post.id, block_index: 0 }).execute();

    // The job engine retries the same trigger: the stop finishes.
    const retried = await stopHandler.prepare(context(await readChat(row.id), '101', 'UOWNER', sandbox.platform));
    if (!('facts' in retried)) throw new Error(`skipped: ${retried.skip}`);
    expect(retried.facts.stopped).toEqual([expect.objectContaining({ kind: 'run', id: run.id, status: 'cancelled' })]);
    expect((await sandbox.platform.getRun(run.id)).status).toBe('cancelled');
    const resource = await handle.db.selectFrom('resources').selectAll().where('platform_id', '=', run.id).executeTakeFirstOrThrow();
    expect(resource.status).toBe('cancelled');
    expect(resource.finished_at).not.toBeNull();
    expect(stopReplyText(retried.facts)).toContain(`Run ${run.id}: cancelled (`);
    expect(retried.facts.closedButtons).toBe(1);
    expect(stopReplyText(retried.facts)).toContain('The buttons offered in this thread are closed.');
    const choice = await handle.db.selectFrom('button_choices').selectAll().where('chat_id', '=', row.id).executeTakeFirstOrThrow();
    expect(choice).toMatchObject({ claimed_by: 'UOWNER', chosen_grant_id: null });
    expect(choice.claimed_at).not.toBeNull();

    // A retry of the same trigger after that (the crash came before the post) says the same.
    const replayed = await stopHandler.prepare(context(await readChat(row.id), '101', 'UOWNER', sandbox.platform));
    if (!('facts' in replayed)) throw new Error(`skipped: ${replayed.skip}`);
    expect(replayed.facts.stopped).toEqual(retried.facts.stopped);

    // Another click (another trigger) is the same stop: nothing more happens.
    const again = await stopHandler.prepare(context(await readChat(row.id), '102', 'UADMIN', sandbox.platform));
    expect(again).toEqual({ skip: expect.stringMatching(/^the thread was already stopped by UOWNER at /) });
  });
});
