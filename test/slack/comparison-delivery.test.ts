// Delivering a comparison: the data table in the verdict, the chart shared once in the thread right
// after it, every fallback taken when Slack refuses its block, and an upload failure that loses nothing.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareRuns, questionChanges, type QuestionAnswer } from '../../src/analysis/index.js';
import type { ComparisonPart } from '../../src/agent/reply.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createSlackClients, SlackPoster } from '../../src/slack/poster.js';
import { getComparisonFile } from '../../src/store/comparison-files.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createPost } from '../../src/store/posts.js';
import { startFakeSlack, type FakeMessage, type FakeSlack, type FakeSlackOptions } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';

const TEAM = 'T0CHART';
const CHANNEL = 'C0CHART';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
let handle: DbHandle;
let thread = 0;
const fakes: FakeSlack[] = [];

beforeAll(async () => {
  handle = createDb(await createTestDatabase('comparison_delivery'), { max: 4 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(async () => {
  await handle.close();
  await Promise.all(fakes.map((f) => f.stop()));
});

function comparisonPart(): ComparisonPart {
  const before: QuestionAnswer[] = [];
  const after: QuestionAnswer[] = [];
  for (let i = 0; i < 60; i += 1) {
    const base = { questionId: `q${i}`, category: `cat${i % 3}`, question: `Question ${i}?`, expectedAnswer: `answer ${i}`, score: 0 };
    const wasRight = i % 4 === 0;
    const isRight = wasRight ? i % 8 !== 0 : i % 3 === 0;
    before.push({ ...base, modelAnswer: wasRight ? base.expectedAnswer : `wrong ${i}`, correct: wasRight, score: wasRight ? 1 : 0 });
    after.push({ ...base, modelAnswer: isRight ? base.expectedAnswer : `still wrong ${i}`, correct: isRight, score: isRight ? 1 : 0 });
  }
  const outcome = (q: QuestionAnswer) => ({ questionId: q.questionId, category: q.category, correct: q.correct! });
  return {
    kind: 'comparison',
    comparison: compareRuns({ before: before.map(outcome), after: after.map(outcome) }),
    before: { runId: 'run_1', modelId: 'base-model' },
    after: { runId: 'run_2', modelId: 'ft/base-model-lora' },
    cost: { costs: [{ label: 'baseline run run_1', credits: 4, charged: true, estimated: 4 }], agentUsd: 0.02, elapsedMs: 60_000 },
    questions: questionChanges(before, after),
  };
}

async function setup(options: FakeSlackOptions = {}, posterOptions: { comparisonCharts?: boolean } = {}) {
  const slack = await startFakeSlack({ teamId: TEAM, ...options });
  fakes.push(slack);
  const logger = pino({ level: 'silent' });
  const poster = new SlackPoster(handle.db, createSlackClients('xoxb-test', slack.apiUrl, logger), logger, undefined, undefined, posterOptions);
  thread += 1;
  const chat = await handle.db
    .insertInto('chats')
    .values({ team_id: TEAM, channel_id: CHANNEL, thread_ts: `1733160000.${String(thread).padStart(6, '0')}`, owner_user_id: 'UOWNER' })
    .returningAll()
    .executeTakeFirstOrThrow();
  const post = await createPost(handle.db, {
    teamId: TEAM,
    chatId: chat.id,
    turnId: null,
    postKey: `verdict:${chat.id}`,
    channelId: CHANNEL,
    threadTs: chat.thread_ts,
    reply: { to: 'UOWNER', text: 'Here is the comparison.', parts: [comparisonPart()] },
  });
  const inThread = () => slack.messages(CHANNEL, chat.thread_ts);
  const verdict = () => inThread().find((m) => !m.files) as FakeMessage;
  const level = async () => (await handle.db.selectFrom('posts').select('render_level').where('id', '=', post.id).executeTakeFirstOrThrow()).render_level;
  return { slack, poster, chat, post, inThread, verdict, level };
}

const blockTypes = (m: FakeMessage) => (m.blocks ?? []).map((b) => (b as { type: string }).type);

describe('delivering a comparison', () => {
  it('the verdict carries the data table; the chart follows it in the thread, as a PNG, shared once', async () => {
    const s = await setup();
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.slack.violations).toEqual([]);
    const [verdict, chart, ...rest] = s.inThread();
    expect(rest).toEqual([]);
    expect(blockTypes(verdict!)).toContain('data_table');
    expect(blockTypes(verdict!)).toContain('data_visualization');
    expect(await s.level()).toBeNull();
    expect(chart!.files).toHaveLength(1);
    expect(chart!.text).toMatch(/^<@UOWNER> Accuracy before/);
    const file = s.slack.files.get(chart!.files![0]!.id)!;
    expect(file.content.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(file.completed).toBe(true);
    expect(await getComparisonFile(handle.db, TEAM, s.post.id)).toMatchObject({ state: 'shared', fileId: file.id });

    // Delivered again (a retried job): nothing is posted or uploaded twice.
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.inThread()).toHaveLength(2);
    expect(s.slack.callsTo('files.getUploadURLExternal')).toHaveLength(1);
  });

  it('with charts left off (a bench measuring their cost), the verdict is posted whole and nothing is uploaded', async () => {
    const s = await setup({}, { comparisonCharts: false });
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.inThread()).toHaveLength(1);
    expect(blockTypes(s.verdict())).toContain('data_table');
    expect(s.slack.callsTo('files.getUploadURLExternal')).toHaveLength(0);
  });

  it('a crash after Slack shared the chart but before it was recorded: the retry finds it and uploads nothing', async () => {
    const s = await setup();
    await s.poster.deliverPending(TEAM, s.chat.id);
    const fileId = (await getComparisonFile(handle.db, TEAM, s.post.id))!.fileId!;
    await handle.db.updateTable('comparison_files').set({ state: 'uploading' }).where('post_id', '=', s.post.id).execute();
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.slack.callsTo('files.getUploadURLExternal')).toHaveLength(1);
    expect(s.slack.callsTo('files.completeUploadExternal')).toHaveLength(1);
    expect(await getComparisonFile(handle.db, TEAM, s.post.id)).toMatchObject({ state: 'shared', fileId });
  });

  it('a transient upload failure is retried by the job; the chart is then shared once', async () => {
    const s = await setup();
    s.slack.failNext('files.getUploadURLExternal', 1, { status: 500 });
    await expect(s.poster.deliverPending(TEAM, s.chat.id)).rejects.toThrow();
    expect(s.inThread()).toHaveLength(1);
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.inThread().filter((m) => m.files)).toHaveLength(1);
    expect(await getComparisonFile(handle.db, TEAM, s.post.id)).toMatchObject({ state: 'shared', attempts: 2 });
  });

  it('Slack refuses the upload: the verdict is updated with a short note, nothing else changes', async () => {
    const s = await setup();
    s.slack.failNext('files.completeUploadExternal', 1, { status: 200, error: 'not_in_channel' });
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.inThread().filter((m) => m.files)).toEqual([]);
    const verdict = s.verdict();
    expect(verdict.updates).toBe(1);
    expect(JSON.stringify(verdict.blocks)).toContain('The accuracy chart could not be shared (Slack answered not_in_channel)');
    expect(blockTypes(verdict)).toContain('data_table');
    expect(await getComparisonFile(handle.db, TEAM, s.post.id)).toMatchObject({ state: 'failed' });
    // Not retried: a refusal is final.
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.slack.callsTo('files.completeUploadExternal')).toHaveLength(1);
  });

  it("Slack's bar chart refused: the same message without it, the data table kept", async () => {
    const s = await setup({ refuseBlockTypes: ['data_visualization'] });
    await s.poster.deliverPending(TEAM, s.chat.id);
    const types = blockTypes(s.verdict());
    expect(types).toContain('data_table');
    expect(types).not.toContain('data_visualization');
    expect(await s.level()).toBe('no_chart_block');
    expect(s.inThread().filter((m) => m.files)).toHaveLength(1);
  });

  it('data_table refused: the questions as text, the summary table kept', async () => {
    const s = await setup({ refuseBlockTypes: ['data_table'] });
    await s.poster.deliverPending(TEAM, s.chat.id);
    const types = blockTypes(s.verdict());
    expect(types).toContain('table');
    expect(types).not.toContain('data_table');
    expect(JSON.stringify(s.verdict().blocks)).toContain('Questions that changed');
    expect(await s.level()).toBe('questions_as_text');
    // Every try before the last carried the data table (the verdict's feedback buttons are tried as plain buttons first).
    const tries = s.slack.callsTo('chat.postMessage');
    expect(tries.at(-1)!.response).toMatchObject({ ok: true });
    for (const t of tries.slice(0, -1)) {
      expect(t.response).toMatchObject({ ok: false, error: 'invalid_blocks' });
      expect(JSON.stringify(t.args.blocks)).toContain('"data_table"');
    }
    expect(s.inThread().filter((m) => m.files)).toHaveLength(1);
  });

  it('the note of a refused upload keeps the fallback the verdict was posted at, and steps down where none was recorded', async () => {
    const s = await setup({ refuseBlockTypes: ['data_table'] });
    s.slack.failNext('files.completeUploadExternal', 1, { status: 200, error: 'not_in_channel' });
    await s.poster.deliverPending(TEAM, s.chat.id);
    const verdict = s.verdict();
    expect(verdict.updates).toBe(1);
    expect(blockTypes(verdict)).not.toContain('data_table');
    expect(JSON.stringify(verdict.blocks)).toContain('could not be shared');
    expect(s.slack.callsTo('chat.update')).toHaveLength(1);
    // A post recovered after a crash has no level recorded: the update steps down until Slack takes it.
    await handle.db.updateTable('posts').set({ render_level: null }).where('id', '=', s.post.id).execute();
    await s.poster.refreshChoices(TEAM, s.post.id);
    await (s.poster as unknown as { refreshPost(t: string, p: string): Promise<void> }).refreshPost(TEAM, s.post.id);
    expect(s.verdict().updates).toBe(2);
    expect(await s.level()).toBe('questions_as_text');
  });

  it('every table refused: everything as text', async () => {
    const s = await setup({ refuseBlockTypes: ['data_table', 'table'] });
    await s.poster.deliverPending(TEAM, s.chat.id);
    const types = blockTypes(s.verdict());
    expect(types.filter((t) => t === 'table' || t === 'data_table')).toEqual([]);
    expect(JSON.stringify(s.verdict().blocks)).toContain('All questions (60)');
    expect(await s.level()).toBe('all_text');
  });

  it('every block refused: the text alone, and the chart still follows', async () => {
    const s = await setup({ refuseBlockTypes: ['header', 'section'] });
    await s.poster.deliverPending(TEAM, s.chat.id);
    expect(s.verdict().blocks ?? []).toEqual([]);
    expect(s.verdict().text).toContain('<@UOWNER> Here is the comparison.');
    expect(await s.level()).toBe('plain');
    // Full (and again with plain feedback buttons), then each plainer level down to the text alone.
    expect(s.slack.callsTo('chat.postMessage')).toHaveLength(6);
    expect(s.inThread().filter((m) => m.files)).toHaveLength(1);
  });
});
