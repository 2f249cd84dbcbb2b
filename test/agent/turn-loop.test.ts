// The turn loop on a real Postgres: tool calls and results, coded tool errors, refusals, resumption, model outages.
import { APIConnectionError } from '@anthropic-ai/sdk';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelClient, ModelRequest, ModelResponse } from '../../src/agent/model.js';
import { defineTool, toolDefinitions, ToolError, type AgentTool } from '../../src/agent/tools/tool.js';
import { RetryLater, runTurn, type TurnDeps } from '../../src/agent/turn.js';
import { loadConfig } from '../../src/config.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { PlatformError } from '@verdict/contract/errors';
import type { SlackPoster } from '../../src/slack/poster.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { enqueueSweptOutcome } from '../../src/store/resource-events.js';
import { upsertResource } from '../../src/store/resources.js';
import type { Chat, TriggerKind } from '../../src/store/tables.js';
import { enqueueTrigger } from '../../src/store/triggers.js';
import { getTriggerWithChat } from '../../src/store/chats.js';
import { startTestSandbox, waitForRun, type TestSandbox } from '../platform/helpers.js';
import { createTestDatabase } from '../kit/database.js';

const config = loadConfig({ SLACK_BOT_TOKEN: 'xoxb-t', SLACK_SIGNING_SECRET: 's', ANTHROPIC_API_KEY: 'k', AGENT_MODEL: 'claude-sonnet-4-5' });

type Block = ModelResponse['content'][number];

/** A Messages API response, as the SDK returns it. */
function response(content: Array<Partial<Block> & { type: string }>, stop: ModelResponse['stop_reason']): ModelResponse {
  return {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: content as Block[],
    stop_reason: stop,
    stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  } as ModelResponse;
}
const text = (t: string) => response([{ type: 'text', text: t, citations: null }], 'end_turn');
const toolUse = (id: string, name: string, input: unknown) => response([{ type: 'tool_use', id, name, input }], 'tool_use');

/** Answers each model call with the next scripted response (or throws it), and keeps the requests. */
function scriptedModel(script: Array<ModelResponse | Error>): ModelClient & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    requests,
    create: async (request) => {
      requests.push(structuredClone(request));
      const next = script.shift();
      if (!next) throw new Error('the model was called more often than scripted');
      if (next instanceof Error) throw next;
      return next;
    },
  };
}

/** Slack is out of reach: the loop's outbox rows are what is checked; delivery and ephemerals are recorded. */
function recordingPoster() {
  const calls = { delivered: [] as string[], ephemeral: [] as Array<{ user: string; text: string }> };
  const poster = {
    deliverPending: async (_teamId: string, chatId: string) => void calls.delivered.push(chatId),
    postEphemeral: async (_channel: string, user: string, message: string) => void calls.ephemeral.push({ user, text: message }),
  } as unknown as SlackPoster;
  return { poster, calls };
}

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text.',
  input: z.object({ text: z.string().min(1) }),
  run: async ({ text: t }) => ({ content: `echo: ${t}` }),
});
const outage = defineTool({
  name: 'outage',
  description: 'Fails as the platform does when it is down.',
  input: z.object({}),
  run: async () => {
    throw new PlatformError('unavailable', 'the platform is unavailable (503)', { status: 503 });
  },
});
const refuses = defineTool({
  name: 'refuses',
  description: 'Fails as a tool does.',
  input: z.object({}),
  run: async () => {
    throw new ToolError('No run r9 was found.', 'resource_not_found');
  },
});
const tools = [echo, outage, refuses] as unknown as AgentTool<never>[];

let handle: DbHandle;
let sandbox: TestSandbox;
beforeAll(async () => {
  handle = createDb(await createTestDatabase('turnloop'));
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
  sandbox = await startTestSandbox({ timeScale: 0.01 });
}, 60_000);
afterAll(async () => {
  await sandbox?.sandbox.stop();
  await handle?.close();
});

function deps(model: ModelClient, poster: SlackPoster, ended: Chat[] = []): TurnDeps {
  return {
    db: handle.db,
    config,
    logger: pino({ level: 'silent' }),
    model,
    platform: sandbox.platform,
    sandbox: true,
    poster,
    system: 'You are a test.',
    tools,
    toolDefinitions: toolDefinitions(tools),
    afterTurn: async (chat) => void ended.push(chat),
  };
}

let thread = 0;
async function newTrigger(kind: TriggerKind, userId: string, payload: Record<string, unknown>) {
  thread += 1;
  const result = await enqueueTrigger(
    handle.db,
    { create: true, channelId: 'C1', threadTs: `1733.${thread}`, ownerUserId: 'UOWNER' },
    { teamId: 'T1', kind, dedupeKey: `${kind}-${thread}`, userId, payload },
  );
  return result!;
}

const once = { attempts: 1, maxAttempts: 3 };

async function postsOf(chatId: string) {
  return handle.db.selectFrom('posts').selectAll().where('chat_id', '=', chatId).orderBy('id').execute();
}

describe('the turn loop', () => {
  it('runs tools until the model ends its turn, then stores the answer, the turn, its cost and its Activity in one go', async () => {
    const { chatId, triggerId } = await newTrigger('mention', 'UOWNER', { text: 'say hi through echo' });
    const model = scriptedModel([toolUse('toolu_1', 'echo', { text: 'hi' }), text('The tool said hi.')]);
    const { poster, calls } = recordingPoster();
    const ended: Chat[] = [];
    await runTurn(deps(model, poster, ended), triggerId, once);

    expect(model.requests).toHaveLength(2);
    const first = model.requests[0]!.messages.at(-1)!;
    expect(JSON.stringify(first.content)).toContain('[Slack message from <@UOWNER>]\\nsay hi through echo');
    const second = model.requests[1]!.messages.at(-1)!.content as Array<{ type: string; tool_use_id?: string; content?: string; is_error?: boolean }>;
    expect(second.find((b) => b.type === 'tool_result')).toMatchObject({ tool_use_id: 'toolu_1', content: 'echo: hi' });

    const posts = await postsOf(chatId);
    expect(posts).toHaveLength(1);
    expect((posts[0]!.payload as { reply: { text: string } }).reply.text).toContain('The tool said hi.');
    const turn = await handle.db.selectFrom('turns').selectAll().where('trigger_id', '=', triggerId).executeTakeFirstOrThrow();
    expect(turn).toMatchObject({ status: 'completed', model_calls: 2, input_tokens: 200, output_tokens: 40 });
    expect(Number(turn.cost_usd)).toBeGreaterThan(0);
    expect((await getTriggerWithChat(handle.db, triggerId))!.trigger.status).toBe('done');
    const activity = await handle.db.selectFrom('activity').selectAll().where('turn_id', '=', turn.id).executeTakeFirstOrThrow();
    expect(activity).toMatchObject({ summary: 'The tool said hi.', trigger_label: 'Mention', post_id: posts[0]!.id });
    expect(calls.delivered).toEqual([chatId]);
    expect(ended.map((c) => c.id)).toEqual([chatId]);

    // Run again (a redelivered job): nothing is asked of the model, nothing is stored twice.
    await runTurn(deps(model, poster), triggerId, once);
    expect(model.requests).toHaveLength(2);
    expect(await postsOf(chatId)).toHaveLength(1);
  });

  it("gives the model coded errors for an unknown tool, bad input, a tool's refusal, and a platform outage while a person waits", async () => {
    const { triggerId } = await newTrigger('mention', 'UOWNER', { text: 'try everything' });
    const model = scriptedModel([
      response(
        [
          { type: 'tool_use', id: 'toolu_a', name: 'nope', input: {} },
          { type: 'tool_use', id: 'toolu_b', name: 'echo', input: { text: '' } },
          { type: 'tool_use', id: 'toolu_c', name: 'refuses', input: {} },
          { type: 'tool_use', id: 'toolu_d', name: 'outage', input: {} },
        ],
        'tool_use',
      ),
      text('Nothing worked.'),
    ]);
    await runTurn(deps(model, recordingPoster().poster), triggerId, once);
    const results = model.requests[1]!.messages.at(-1)!.content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>;
    expect(results.map((r) => [r.tool_use_id, r.is_error, r.content])).toEqual([
      ['toolu_a', true, 'Unknown tool "nope".'],
      ['toolu_b', true, expect.stringMatching(/^Invalid input for echo: text /)],
      ['toolu_c', true, 'No run r9 was found.'],
      ['toolu_d', true, 'the platform is unavailable (503)'],
    ]);
  });

  it("refuses a stranger's button click before any model call, told only to them", async () => {
    const { chatId, triggerId } = await newTrigger('button', 'USTRANGER', { label: 'Approve 60 credits' });
    const model = scriptedModel([]);
    const { poster, calls } = recordingPoster();
    await runTurn(deps(model, poster), triggerId, once);
    expect(model.requests).toHaveLength(0);
    expect(calls.ephemeral).toEqual([{ user: 'USTRANGER', text: expect.stringContaining('Only <@UOWNER>, who started this thread, or an admin can use these buttons') }]);
    expect((await getTriggerWithChat(handle.db, triggerId))?.trigger).toMatchObject({ status: 'done', error: 'refused' });
    expect(await postsOf(chatId)).toHaveLength(0);
  });

  it('tells the thread, with a Retry button, when the model stays unreachable for a person', async () => {
    const { chatId, triggerId } = await newTrigger('mention', 'UOWNER', { text: 'hello' });
    const model = scriptedModel([new APIConnectionError({ message: 'Request timed out.' })]);
    await runTurn(deps(model, recordingPoster().poster), triggerId, once);
    const posts = await postsOf(chatId);
    expect(posts).toHaveLength(1);
    expect(JSON.stringify(posts[0]!.payload)).toMatch(/couldn't reach the model: the request timed out.*Retry/);
    expect((await getTriggerWithChat(handle.db, triggerId))?.trigger).toMatchObject({ status: 'failed', error: 'the request timed out' });
  });

  it('leaves a turn nobody waits on to the job engine while it has attempts left, then tells the thread', async () => {
    const run = await sandbox.platform.launchRun({ benchmarkId: '104', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, `loop-${Date.now()}`);
    await waitForRun(sandbox.platform, run.id);
    const { chatId } = await newTrigger('mention', 'UOWNER', { text: 'start' });
    const resource = await upsertResource(handle.db, { teamId: 'T1', chatId, turnId: null, kind: 'run', platformId: run.id, planStep: null, status: 'running', priceEstimate: 5, webUrl: null });
    expect(await enqueueSweptOutcome(handle.db, { teamId: 'T1', id: resource.id, kind: 'run', platformId: run.id }, 'completed', { maxAttempts: 3 })).toEqual({ created: true });
    const swept = await handle.db.selectFrom('triggers').select('id').where('chat_id', '=', chatId).where('kind', '=', 'reconcile').executeTakeFirstOrThrow();

    const model = scriptedModel([new APIConnectionError({ message: 'Connection error.' }), new APIConnectionError({ message: 'Connection error.' })]);
    const { poster } = recordingPoster();
    await expect(runTurn(deps(model, poster), swept.id, { attempts: 1, maxAttempts: 2 })).rejects.toBeInstanceOf(RetryLater);
    expect(await postsOf(chatId)).toHaveLength(0);
    // The last attempt: the sweep's turn resumes with the event already rendered, and the thread is told.
    await runTurn(deps(model, poster), swept.id, { attempts: 2, maxAttempts: 2 });
    expect(JSON.stringify(model.requests[1]!.messages)).toContain('found by the sweep; its webhook never arrived');
    expect(JSON.stringify((await postsOf(chatId))[0]!.payload)).toContain('the connection failed');
  });
});
