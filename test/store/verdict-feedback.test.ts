// Votes on a verdict in Postgres: one per person per verdict, changed by a later click, tied to the
// turn that wrote the verdict, answered once, scoped by workspace; shown on that turn's Activity line.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import type { Reply } from '../../src/agent/reply.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { listActivity } from '../../src/store/activity-queries.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { recordVerdictVote, votesOnPost, type VerdictVote } from '../../src/store/verdict-feedback.js';
import { createTestDatabase } from '../kit/database.js';
import { seedChat, seedTurn } from '../helpers/activity-seed.js';

let handle: DbHandle;
const db = () => handle.db;
const hex = () => randomBytes(4).toString('hex').toUpperCase();

beforeAll(async () => {
  handle = createDb(await createTestDatabase('verdict_feedback'), { max: 8 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(async () => {
  await handle.close();
});

const outcomes = (n: number, correct: (i: number) => boolean): QuestionOutcome[] =>
  Array.from({ length: n }, (_, i) => ({ questionId: `q${i}`, category: 'c', correct: correct(i) }));

const verdictReply = (): Reply => ({
  to: 'UOWNER',
  text: 'Here is the comparison.',
  parts: [
    {
      kind: 'comparison',
      comparison: compareRuns({ before: outcomes(40, (i) => i % 2 === 0), after: outcomes(40, (i) => i % 4 !== 3) }),
      before: { runId: 'r1', modelId: 'base' },
      after: { runId: 'r2', modelId: 'ft' },
      cost: { costs: [], agentUsd: 0.01, elapsedMs: null },
    },
  ],
});

/** A thread whose turn posted a delivered message; a verdict unless `verdict: false`. */
async function seedVerdict(options: { verdict?: boolean } = {}) {
  const teamId = `T${hex()}`;
  const chatId = await seedChat(db(), { teamId, ownerUserId: 'UOWNER' });
  const { turnId, postId } = await seedTurn(db(), { teamId, chatId, summary: 'The verdict' });
  const reply: Reply = options.verdict === false ? { to: 'UOWNER', text: 'Launched run r1.', parts: [] } : verdictReply();
  const post = await db()
    .updateTable('posts')
    .set({ payload: JSON.stringify({ reply }) })
    .where('id', '=', postId!)
    .returning(['channel_id', 'slack_ts', 'thread_ts'])
    .executeTakeFirstOrThrow();
  const vote = (over: Partial<VerdictVote> = {}): VerdictVote => ({
    teamId,
    channelId: post.channel_id,
    messageTs: post.slack_ts!,
    userId: 'UREADER',
    vote: 'positive',
    ...over,
  });
  return { teamId, chatId, turnId, postId: postId!, threadTs: post.thread_ts, vote };
}

async function answers(teamId: string): Promise<Array<{ user: string; text: string; threadTs?: string }>> {
  const rows = await sql<{ payload: { user: string; text: string; threadTs?: string } }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
    where k.identifier = 'button_feedback' and j.payload->>'teamId' = ${teamId} order by j.id`.execute(db());
  return rows.rows.map((r) => r.payload);
}

describe('votes on a verdict', () => {
  it('records a first vote on the turn that wrote the verdict, and thanks the voter in the thread', async () => {
    const s = await seedVerdict();
    const result = await recordVerdictVote(db(), s.vote());
    expect(result).toMatchObject({ outcome: 'recorded', vote: 'positive', previous: null, postId: s.postId, chatId: s.chatId, turnId: s.turnId, ownerUserId: 'UOWNER' });
    expect(await votesOnPost(db(), s.teamId, s.postId)).toEqual([{ userId: 'UREADER', vote: 'positive' }]);
    const row = await db().selectFrom('verdict_feedback').selectAll().where('team_id', '=', s.teamId).executeTakeFirstOrThrow();
    expect(row.turn_id).toBe(s.turnId);
    const [answer, ...rest] = await answers(s.teamId);
    expect(rest).toEqual([]);
    expect(answer).toMatchObject({ user: 'UREADER', threadTs: s.threadTs });
    expect(answer!.text).toMatch(/^Thanks: your :\+1: on this verdict is recorded/);
  });

  it('a later click changes the vote (one row per person), and the same vote again changes nothing', async () => {
    const s = await seedVerdict();
    await recordVerdictVote(db(), s.vote());
    const changed = await recordVerdictVote(db(), s.vote({ vote: 'negative' }));
    expect(changed).toMatchObject({ outcome: 'recorded', vote: 'negative', previous: 'positive' });
    const same = await recordVerdictVote(db(), s.vote({ vote: 'negative' }));
    expect(same).toMatchObject({ outcome: 'recorded', previous: 'negative' });
    expect(await votesOnPost(db(), s.teamId, s.postId)).toEqual([{ userId: 'UREADER', vote: 'negative' }]);
    const texts = (await answers(s.teamId)).map((a) => a.text);
    expect(texts).toHaveLength(3);
    expect(texts[1]).toBe('Thanks: your vote on this verdict is now :-1: (it was :+1:).');
    expect(texts[2]).toMatch(/already recorded; nothing changed/);
  });

  it('keeps one vote per person under concurrent clicks, the last statement winning', async () => {
    const s = await seedVerdict();
    const clicks = Array.from({ length: 10 }, (_, i) => recordVerdictVote(db(), s.vote({ vote: i % 2 === 0 ? 'positive' : 'negative' })));
    const results = await Promise.all(clicks);
    expect(results.every((r) => r.outcome === 'recorded')).toBe(true);
    const votes = await votesOnPost(db(), s.teamId, s.postId);
    expect(votes).toHaveLength(1);
    expect(['positive', 'negative']).toContain(votes[0]!.vote);
  });

  it('shows the votes on the Activity line of the turn that wrote the verdict, not on other turns', async () => {
    const s = await seedVerdict();
    const other = await seedTurn(db(), { teamId: s.teamId, chatId: s.chatId, summary: 'A later turn' });
    await recordVerdictVote(db(), s.vote({ userId: 'UOWNER', vote: 'positive' }));
    await recordVerdictVote(db(), s.vote({ userId: 'UREADER', vote: 'positive' }));
    await recordVerdictVote(db(), s.vote({ userId: 'UREADER', vote: 'negative' }));
    const { entries } = await listActivity(db(), { teamId: s.teamId, viewerId: 'UOWNER', scope: 'mine', limit: 10 });
    const verdictLine = entries.find((e) => e.turnId === s.turnId)!;
    expect(verdictLine.feedback).toEqual({
      positive: 1,
      negative: 1,
      votes: [
        { userId: 'UOWNER', vote: 'positive' },
        { userId: 'UREADER', vote: 'negative' },
      ],
    });
    expect(entries.find((e) => e.turnId === other.turnId)!.feedback).toBeNull();
  });

  it('records nothing on a message that is not a verdict, an unknown message or another workspace, and says so', async () => {
    const plain = await seedVerdict({ verdict: false });
    expect(await recordVerdictVote(db(), plain.vote())).toEqual({ outcome: 'not_a_verdict' });
    expect(await recordVerdictVote(db(), plain.vote({ messageTs: '1.000001', threadTs: plain.threadTs }))).toEqual({ outcome: 'not_a_verdict' });
    const s = await seedVerdict();
    const stranger = `T${hex()}`;
    expect(await recordVerdictVote(db(), s.vote({ teamId: stranger }))).toEqual({ outcome: 'not_a_verdict' });
    const stored = await db().selectFrom('verdict_feedback').select('id').where('team_id', 'in', [plain.teamId, s.teamId, stranger]).execute();
    expect(stored).toEqual([]);
    const texts = [...(await answers(plain.teamId)), ...(await answers(stranger))].map((a) => a.text);
    expect(texts).toHaveLength(3);
    for (const text of texts) expect(text).toBe('That message holds no verdict I can record feedback on. Nothing was recorded.');
  });
});
