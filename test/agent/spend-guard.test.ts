import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/agent/plan.js';
import type { Reply } from '../../src/agent/reply.js';
import { authorizeLaunch, type ButtonGrant, type LaunchIntent } from '../../src/agent/spend-guard.js';
import { matchPlanStep } from '../../src/agent/spend-policy.js';
import { handlerFor } from '../../src/agent/triggers/index.js';
import type { ToolContext } from '../../src/agent/tools/tool.js';
import { loadConfig } from '../../src/config.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { offeredChoices } from '../../src/slack/offered-choices.js';
import { claimButtonClick } from '../../src/store/button-choices.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createPost, markPostDelivered } from '../../src/store/posts.js';
import { getTriggerWithChat } from '../../src/store/chats.js';
import type { Chat, Trigger, TriggerKind } from '../../src/store/tables.js';
import { createTestDatabase } from '../kit/database.js';

const config = loadConfig({
  SLACK_BOT_TOKEN: 'xoxb-t',
  SLACK_SIGNING_SECRET: 's',
  ANTHROPIC_API_KEY: 'k',
  SPEND_CONFIRM_THRESHOLD: '50',
  CHAT_BUDGET: '100',
  ADMIN_USER_IDS: 'UADMIN',
});

const plan: Plan = {
  agreedBy: 'UOWNER',
  agreedAt: new Date().toISOString(),
  benchmarkId: '104',
  baseModelId: 'base',
  augmentation: 5,
  heldOutFraction: 0,
  trainedModelId: 'ft',
  steps: [
    { kind: 'baseline_run', status: 'completed', attempt: 1, runId: 'run_1' },
    { kind: 'train', status: 'pending', attempt: 1, datasetId: 'ds_1' },
    { kind: 'trained_run', status: 'pending', attempt: 1 },
    { kind: 'compare', status: 'pending', attempt: 1 },
  ],
};

let handle: DbHandle;
let chatId: string;
beforeAll(async () => {
  handle = createDb(await createTestDatabase('guard'));
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
  const chat = await handle.db
    .insertInto('chats')
    .values({ team_id: 'T1', channel_id: 'C1', thread_ts: '1.0', owner_user_id: 'UOWNER', plan: JSON.stringify(plan) })
    .returning('id')
    .executeTakeFirstOrThrow();
  chatId = chat.id;
});
afterAll(async () => {
  await handle.close();
});

function ctx(kind: TriggerKind, userId: string | null, payload: Record<string, unknown> = {}, chatPlan: Plan | null = plan): ToolContext {
  const chat = { id: chatId, team_id: 'T1', channel_id: 'C1', thread_ts: '1.0', owner_user_id: 'UOWNER', plan: chatPlan } as unknown as Chat;
  const trigger = { id: '7', team_id: 'T1', chat_id: chatId, kind, user_id: userId, payload } as unknown as Trigger;
  return { db: handle.db, config, chat, trigger, authority: handlerFor(kind).authority } as unknown as ToolContext;
}

/** Posts a message in the chat offering one button with this grant, and clicks it as the owner: the button trigger. */
async function clicked(value: string, chatPlan: Plan | null = null): Promise<ToolContext> {
  const reply: Reply = { to: 'UOWNER', text: 'x', parts: [{ kind: 'choices', options: [{ label: 'Go', grant: JSON.parse(value) as ButtonGrant }] }] };
  const button = offeredChoices(reply)[0]!.buttons[0]!;
  const post = await createPost(handle.db, {
    teamId: 'T1',
    chatId,
    turnId: null,
    postKey: `p-${randomBytes(4).toString('hex')}`,
    channelId: 'C1',
    threadTs: '1.0',
    reply,
  });
  const ts = `2.${randomBytes(4).toString('hex')}`;
  await markPostDelivered(handle.db, 'T1', post.id, ts, null);
  const claim = await claimButtonClick(handle.db, { teamId: 'T1', channelId: 'C1', messageTs: ts, actionId: button.actionId, value: button.value, userId: 'UOWNER' }, { adminUserIds: [] });
  if (claim.outcome !== 'claimed') throw new Error(`click not claimed: ${claim.outcome}`);
  const trigger = (await getTriggerWithChat(handle.db, claim.triggerId))!.trigger;
  const chat = { id: chatId, team_id: 'T1', channel_id: 'C1', thread_ts: '1.0', owner_user_id: 'UOWNER', plan: chatPlan } as unknown as Chat;
  return { db: handle.db, config, chat, trigger, authority: handlerFor(trigger.kind).authority } as unknown as ToolContext;
}

const train: LaunchIntent = { tool: 'dataset-build', runId: 'run_1', augmentation: 5, heldOutFraction: 0 };
const trainJob: LaunchIntent = { tool: 'training-launch', datasetId: 'ds_1', baseModelId: 'base' };
const rogue: LaunchIntent = { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'other' };
const cheap = { credits: 10, availableCredits: 500 };

describe('spend guard', () => {
  it('maps launches to plan steps', () => {
    expect(matchPlanStep(plan, train)).toBe('train');
    expect(matchPlanStep(plan, trainJob)).toBe('train');
    expect(matchPlanStep(plan, { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'ft' })).toBe('trained_run');
    expect(matchPlanStep(plan, rogue)).toBeUndefined();
    expect(matchPlanStep(plan, { tool: 'benchmark-launch', benchmarkId: '205', modelId: 'base' })).toBeUndefined();
  });

  it('lets an event-woken turn launch only the next step of the plan, with a key from the chat and step', async () => {
    const ok = await authorizeLaunch(ctx('platform_event', null), trainJob, cheap, { toolUseId: 'a' });
    expect(ok).toEqual({ allowed: true, planStep: 'train', idempotencyKey: `chat-${chatId}-train-1` });
    const again = await authorizeLaunch(ctx('reconcile', null), trainJob, cheap, { toolUseId: 'b' });
    expect(again).toMatchObject({ allowed: true, idempotencyKey: `chat-${chatId}-train-1` });
    for (const intent of [rogue, { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'ft' } as LaunchIntent]) {
      const refused = await authorizeLaunch(ctx('platform_event', null), intent, cheap, { toolUseId: 'c' });
      expect(refused).toMatchObject({ allowed: false, reason: expect.stringMatching(/spend guard/) });
    }
    const noPlan = await authorizeLaunch(ctx('platform_event', null, {}, null), trainJob, cheap, { toolUseId: 'd' });
    expect(noPlan.allowed).toBe(false);
  });

  it('lets only the owner or an admin spend from a message', async () => {
    expect((await authorizeLaunch(ctx('mention', 'UOWNER', {}, null), rogue, cheap, { toolUseId: 'e' })).allowed).toBe(true);
    expect((await authorizeLaunch(ctx('reply', 'UADMIN', {}, null), rogue, cheap, { toolUseId: 'e' })).allowed).toBe(true);
    expect(await authorizeLaunch(ctx('reply', 'USTRANGER', {}, null), rogue, cheap, { toolUseId: 'e' })).toMatchObject({ allowed: false });
  });

  it('asks for approval above the threshold, the budget or the balance, and an approval covers exactly its launch', async () => {
    const big = await authorizeLaunch(ctx('mention', 'UOWNER', {}, null), rogue, { credits: 60, availableCredits: 500 }, { toolUseId: 'f' });
    expect(big).toMatchObject({ allowed: false, approval: { intent: rogue, credits: 60 } });
    const broke = await authorizeLaunch(ctx('mention', 'UOWNER', {}, null), rogue, { credits: 10, availableCredits: 5 }, { toolUseId: 'f' });
    expect(broke).toMatchObject({ allowed: false, reason: expect.stringMatching(/only 5 are available/) });

    await handle.db
      .insertInto('resources')
      .values({ team_id: 'T1', chat_id: chatId, kind: 'run', platform_id: 'run_spent', status: 'completed', price_estimate: 45, price_charged: 45.5 })
      .execute();
    await handle.db
      .insertInto('resources')
      .values({ team_id: 'T1', chat_id: chatId, kind: 'training', platform_id: 'tj_spent', status: 'running', price_estimate: 40 })
      .execute();
    const overBudget = await authorizeLaunch(ctx('mention', 'UOWNER', {}, null), rogue, { credits: 20, availableCredits: 500 }, { toolUseId: 'g' });
    expect(overBudget).toMatchObject({ allowed: false, reason: expect.stringMatching(/spent 85.50 credits/) });

    const value = JSON.stringify({ kind: 'approve', intent: rogue, credits: 60 });
    const approve = await clicked(value);
    const approved = await authorizeLaunch(approve, rogue, { credits: 60, availableCredits: 500 }, { toolUseId: 'h' });
    expect(approved).toMatchObject({ allowed: true, idempotencyKey: `chat-${chatId}-button-${approve.trigger.id}-benchmark-launch` });
    const other = await authorizeLaunch(approve, { ...rogue, modelId: 'base' }, cheap, { toolUseId: 'h' });
    expect(other.allowed).toBe(false);
    const dearer = await authorizeLaunch(approve, rogue, { credits: 61, availableCredits: 500 }, { toolUseId: 'h' });
    expect(dearer.allowed).toBe(false);
    const stranger = { ...approve, trigger: { ...approve.trigger, user_id: 'USTRANGER' } };
    expect((await authorizeLaunch(stranger, rogue, { credits: 60, availableCredits: 500 }, { toolUseId: 'h' })).allowed).toBe(false);
    // The value a button trigger carried is never read: only the grant stored with the message counts.
    const forged = ctx('button', 'UOWNER', { value }, null);
    expect(await authorizeLaunch(forged, rogue, { credits: 60, availableCredits: 500 }, { toolUseId: 'h' })).toMatchObject({ allowed: false });
    const otherChat = { ...approve, trigger: { ...approve.trigger, chat_id: '999999' } };
    expect((await authorizeLaunch(otherChat, rogue, { credits: 60, availableCredits: 500 }, { toolUseId: 'h' })).allowed).toBe(false);
  });

  it('lets a next-step button launch exactly its action', async () => {
    const button = await clicked(JSON.stringify({ kind: 'next', action: { action: 'train_on_failures', runId: 'run_9', modelId: 'base', heldOutFraction: 0.3, augmentation: 5 } }));
    const build = { tool: 'dataset-build', runId: 'run_9', augmentation: 5, heldOutFraction: 0.3 } as LaunchIntent;
    expect((await authorizeLaunch(button, build, { credits: 0, availableCredits: 0 }, { toolUseId: 'i' })).allowed).toBe(true);
    const job = { tool: 'training-launch', datasetId: 'ds_9', baseModelId: 'base' } as LaunchIntent;
    expect((await authorizeLaunch(button, job, { credits: 1, availableCredits: 500 }, { toolUseId: 'j', datasetRunId: 'run_9' })).allowed).toBe(true);
    expect((await authorizeLaunch(button, job, { credits: 1, availableCredits: 500 }, { toolUseId: 'j', datasetRunId: 'run_8' })).allowed).toBe(false);
    expect((await authorizeLaunch(button, rogue, cheap, { toolUseId: 'k' })).allowed).toBe(false);
  });
});
