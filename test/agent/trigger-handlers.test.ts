// Each trigger handler: who may start the turn, what it prepares (against the sandbox platform and Postgres), what the model reads.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/agent/plan.js';
import { handlerFor, type TriggerContext } from '../../src/agent/triggers/index.js';
import { buttonHandler } from '../../src/agent/triggers/button.js';
import { mentionHandler } from '../../src/agent/triggers/mention.js';
import { renderResourceEvent } from '../../src/agent/triggers/platform-event.js';
import { loadConfig } from '../../src/config.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { ingestPlatformEvents } from '../../src/store/resource-events.js';
import { findResourceByPlatformId, upsertResource } from '../../src/store/resources.js';
import type { Chat, Trigger, TriggerKind } from '../../src/store/tables.js';
import { getTriggerWithChat } from '../../src/store/chats.js';
import { startTestSandbox, waitForRun, type TestSandbox } from '../platform/helpers.js';
import { createTestDatabase } from '../kit/database.js';

const config = loadConfig({ SLACK_BOT_TOKEN: 'xoxb-t', SLACK_SIGNING_SECRET: 's', ANTHROPIC_API_KEY: 'k', ADMIN_USER_IDS: 'UADMIN' });

const plan: Plan = {
  agreedBy: 'UOWNER',
  agreedAt: '2026-12-04T10:00:00.000Z',
  benchmarkId: '104',
  baseModelId: 'qwen/Qwen2.5-0.5B-Instruct',
  augmentation: 5,
  heldOutFraction: 0,
  steps: [
    { kind: 'baseline_run', status: 'launched', attempt: 1 },
    { kind: 'train', status: 'pending', attempt: 1 },
  ],
};

function chat(over: Partial<Chat> = {}): Chat {
  return { id: '1', team_id: 'T1', channel_id: 'C1', thread_ts: '1.0', owner_user_id: 'UOWNER', plan: null, decision: null, ...over } as Chat;
}

function trigger(kind: TriggerKind, userId: string | null, payload: Record<string, unknown> = {}): Trigger {
  return { id: '9', team_id: 'T1', chat_id: '1', kind, user_id: userId, payload, dedupe_key: 'k' } as unknown as Trigger;
}

describe('trigger handlers without I/O', () => {
  it('give each kind its authority and say which turns nobody waits on', () => {
    const table = (['mention', 'reply', 'button', 'retry', 'platform_event', 'reconcile'] as const).map((kind) => [kind, handlerFor(kind).authority, handlerFor(kind).automatic]);
    expect(table).toEqual([
      ['mention', 'person', false],
      ['reply', 'person', false],
      ['button', 'button', false],
      ['retry', 'person', false],
      ['platform_event', 'plan', true],
      ['reconcile', 'plan', true],
    ]);
  });

  it('let anyone talk, but only the owner or an admin press a button', () => {
    const ctx = (kind: TriggerKind, user: string) => ({ chat: chat(), trigger: trigger(kind, user), config }) as unknown as TriggerContext;
    expect(mentionHandler.authorize(ctx('mention', 'USTRANGER'))).toBeUndefined();
    expect(buttonHandler.authorize(ctx('button', 'UOWNER'))).toBeUndefined();
    expect(buttonHandler.authorize(ctx('button', 'UADMIN'))).toBeUndefined();
    const refused = buttonHandler.authorize(ctx('button', 'USTRANGER'));
    expect(refused).toMatchObject({ code: 'button_not_allowed', where: 'ephemeral', message: expect.stringContaining('Only <@UOWNER>, who started this thread, or an admin') });
    expect(handlerFor('retry').authorize(ctx('retry', 'USTRANGER'))).toMatchObject({ code: 'button_not_allowed' });
  });

  it('render a message with its shared files, bounded, and the agreed plan', async () => {
    const files = [{ id: 'F1', name: 'qs.jsonl', mimetype: 'application/jsonl', size: 120, url_private_download: 'https://files.slack.com/x' }];
    const prepared = await mentionHandler.prepare({ chat: chat({ plan }), trigger: trigger('mention', 'UOWNER', { text: 'run it', files }) } as unknown as TriggerContext);
    if (!('facts' in prepared)) throw new Error('a mention is never skipped');
    const text = mentionHandler.render(prepared.facts);
    expect(text).toContain('[Slack message from <@UOWNER>]\nrun it');
    expect(text).toContain('"qs.jsonl" (file id F1, application/jsonl, 120 bytes)');
    expect(text).toContain('[Agreed plan of this thread]\n1. run benchmark 104 on qwen/Qwen2.5-0.5B-Instruct [launched]');
    const long = mentionHandler.render({ userId: 'U', text: 'x'.repeat(100_000), files: [], plan: undefined });
    expect(long.length).toBeLessThan(50_000);
  });

  it('render a button as exactly what its stored grant stands for', () => {
    const intent = { tool: 'benchmark-launch' as const, benchmarkId: '104', modelId: 'm' };
    expect(buttonHandler.render({ userId: 'UOWNER', grant: { kind: 'approve', intent, credits: 60 }, plan: undefined })).toBe(
      `[<@UOWNER> pressed "Approve 60 credits"] They approve exactly this launch: ${JSON.stringify(intent)}. Make it now with the matching tool, then report.`,
    );
    expect(buttonHandler.render({ userId: 'UOWNER', grant: { kind: 'retry', trigger: '3' }, plan: undefined })).toBe('[<@UOWNER> pressed Retry] Continue where the conversation stopped.');
    const kept = buttonHandler.render({ userId: 'UOWNER', kept: { kind: 'keep_model', modelId: 'ft-1', label: 'Keep ft-1', by: 'UOWNER', at: 'now' } });
    expect(kept).toMatch(/keeps the model ft-1 \(decided by <@UOWNER>\), and its plan is closed/);
  });

  it('render an event with the next step of the plan, a failure without one, and say when the sweep found it', () => {
    const completed = renderResourceEvent({ type: 'run.completed', kind: 'run', stopped: '', resource: 'Run r1: completed', outcome: 'completed', plan: { ...plan, steps: [{ ...plan.steps[0]!, status: 'completed', runId: 'r1' }, plan.steps[1]!] } }, { foundBySweep: false });
    expect(completed).toContain('[Platform event run.completed]\nRun r1: completed');
    expect(completed).toContain('Next step of the plan, to do now without asking: build the training set from run r1 (dataset-build)');
    const failed = renderResourceEvent({ type: 'run.failed', kind: 'run', stopped: '', resource: 'Run r1: failed', outcome: 'failed', plan }, { foundBySweep: true });
    expect(failed).toContain('[Platform event run.failed (found by the sweep; its webhook never arrived)]');
    expect(failed).toContain('launch nothing; offer to retry');
    const noPlan = renderResourceEvent({ type: 'run.completed', kind: 'run', stopped: '', resource: 'Run r1', outcome: 'completed', plan: undefined }, { foundBySweep: false });
    expect(noPlan).toMatch(/No plan was agreed in this thread: .* Launch nothing\.$/);
    const cancelled = renderResourceEvent(
      { type: 'run.cancelled', kind: 'run', stopped: '4 of 30 questions answered, charged 0.06 of 0.51 credits', resource: 'Run r1: cancelled', outcome: 'cancelled', plan },
      { foundBySweep: false },
    );
    expect(cancelled).toContain('The run was cancelled (4 of 30 questions answered, charged 0.06 of 0.51 credits)');
    expect(cancelled).toContain('Launch nothing.');
    expect(cancelled).not.toContain('Next step of the plan');
    expect(handlerFor('reconcile').render({ type: 'run.completed', kind: 'run', stopped: '', resource: 'R', outcome: 'completed', plan: undefined })).toContain('found by the sweep');
  });
});

describe('the platform event handler against the sandbox platform', () => {
  let handle: DbHandle;
  let sandbox: TestSandbox;
  beforeAll(async () => {
    handle = createDb(await createTestDatabase('handlers'));
    await migrateToLatest(handle.db);
    await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
    // Runs of benchmark 104 take about 3 s: long enough to see one running, short enough to wait for.
    sandbox = await startTestSandbox({ timeScale: 0.05 });
  }, 60_000);
  afterAll(async () => {
    await sandbox?.sandbox.stop();
    await handle?.close();
  });

  async function eventContext(runId: string, chatPlan: Plan | null): Promise<{ ctx: TriggerContext; chat: Chat; resourceId: string }> {
    const row = await handle.db
      .insertInto('chats')
      .values({ team_id: 'T1', channel_id: 'C1', thread_ts: `1.${runId}`, owner_user_id: 'UOWNER', plan: chatPlan ? JSON.stringify(chatPlan) : null })
      .returningAll()
      .executeTakeFirstOrThrow();
    const resource = await upsertResource(handle.db, {
      teamId: 'T1', chatId: row.id, turnId: null, kind: 'run', platformId: runId, planStep: chatPlan ? 'baseline_run' : null, status: 'queued', priceEstimate: 5, webUrl: null,
    });
    const [ingested] = await ingestPlatformEvents(handle.db, [{ webhookId: `msg_${runId}`, type: 'run.completed', kind: 'run', resourceId: runId, outcome: 'completed' }], { maxAttempts: 3 });
    const stored = (await getTriggerWithChat(handle.db, ingested!.triggerId!))!.trigger;
    const ctx = { db: handle.db, config, logger: pino({ level: 'silent' }), platform: sandbox.platform, sandbox: true, chat: row, trigger: stored } as unknown as TriggerContext;
    return { ctx, chat: row, resourceId: resource.id };
  }

  it('skips an event that came before its run finished, and gives the real finish back to the sweep and the webhook', async () => {
    const run = await sandbox.platform.launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, `early-${Date.now()}`);
    const { ctx } = await eventContext(run.id, null);
    expect((await findResourceByPlatformId(handle.db, 'run', run.id))!.notified_at).not.toBeNull();
    const prepared = await handlerFor('platform_event').prepare(ctx);
    expect(prepared).toMatchObject({ skip: expect.stringMatching(/still running; waiting for it to finish/) });
    if (!('skip' in prepared)) throw new Error('unreachable');
    await prepared.onSkip!(handle.db);
    expect((await findResourceByPlatformId(handle.db, 'run', run.id))!.notified_at).toBeNull();
    // The real finish now gets a trigger of its own.
    await waitForRun(sandbox.platform, run.id);
    const [again] = await ingestPlatformEvents(handle.db, [{ webhookId: `msg_${run.id}_2`, type: 'run.completed', kind: 'run', resourceId: run.id, outcome: 'completed' }], { maxAttempts: 3 });
    expect(again).toMatchObject({ outcome: 'enqueued' });
  });

  it('records a finished run and advances the plan in code before the model reads it', async () => {
    const run = await sandbox.platform.launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, `done-${Date.now()}`);
    const finished = await waitForRun(sandbox.platform, run.id);
    expect(finished.status).toBe('completed');
    const { ctx, chat: row } = await eventContext(run.id, plan);
    const handler = handlerFor('platform_event');
    const prepared = await handler.prepare(ctx);
    if (!('facts' in prepared)) throw new Error(`skipped: ${prepared.skip}`);
    const resource = (await findResourceByPlatformId(handle.db, 'run', run.id))!;
    expect(resource).toMatchObject({ status: 'completed', price_charged: expect.any(String) });
    expect(resource.finished_at).not.toBeNull();
    const stored = await handle.db.selectFrom('chats').select('plan').where('id', '=', row.id).executeTakeFirstOrThrow();
    expect((stored.plan as Plan).steps[0]).toMatchObject({ kind: 'baseline_run', status: 'completed' });
    const text = handler.render(prepared.facts);
    expect(text).toContain(`[Platform event run.completed]\nRun ${run.id}`);
    expect(text).toContain('1. run benchmark 104 on qwen/Qwen2.5-0.5B-Instruct [completed]');
    expect(text).toContain('Next step of the plan, to do now without asking: build the training set');
  });
});
