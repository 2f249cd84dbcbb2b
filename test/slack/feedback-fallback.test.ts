// A Slack that refuses the feedback buttons (invalid_blocks on context_actions) gets the verdict with
// two plain 👍 / 👎 buttons instead, on the first post and on the update after a choice; one that
// takes them gets the feedback_buttons element. A vote on either message is recorded the same way.
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import type { Reply } from '../../src/agent/reply.js';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { VERDICT_FEEDBACK_PATTERN } from '../../src/slack/action-ids.js';
import { createSlackClients, SlackPoster } from '../../src/slack/poster.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createPost } from '../../src/store/posts.js';
import { recordVerdictVote } from '../../src/store/verdict-feedback.js';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { createTestDatabase } from '../kit/database.js';

const TEAM = 'T0FAKE';
const logger = pino({ level: 'silent' });
let handle: DbHandle;
let refusing: FakeSlack;
let accepting: FakeSlack;

beforeAll(async () => {
  handle = createDb(await createTestDatabase('feedback_fallback'), { max: 4 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, logger);
  refusing = await startFakeSlack({ teamId: TEAM, refuseBlockTypes: ['context_actions'] });
  accepting = await startFakeSlack({ teamId: TEAM });
});
afterAll(async () => {
  await handle.close();
  await refusing.stop();
  await accepting.stop();
});

const outcomes = (n: number, correct: (i: number) => boolean): QuestionOutcome[] =>
  Array.from({ length: n }, (_, i) => ({ questionId: `q${i}`, category: 'c', correct: correct(i) }));

const verdict: Reply = {
  to: 'UOWNER',
  text: 'Training helped.',
  parts: [
    {
      kind: 'comparison',
      comparison: compareRuns({ before: outcomes(60, (i) => i % 2 === 0), after: outcomes(60, (i) => i % 5 !== 0) }),
      before: { runId: 'r1', modelId: 'base' },
      after: { runId: 'r2', modelId: 'ft' },
      cost: { costs: [], agentUsd: 0.02, elapsedMs: null },
    },
    { kind: 'choices', options: [{ label: 'Keep the base model', grant: { kind: 'next', action: { action: 'keep_model', modelId: 'base' } } }] },
  ],
};

let thread = 0;
/** A thread whose turn wrote the verdict, delivered through `slack`. */
async function deliverVerdict(slack: FakeSlack) {
  thread += 1;
  const threadTs = `1733150000.00${String(thread).padStart(4, '0')}`;
  const chat = await handle.db.insertInto('chats').values({ team_id: TEAM, channel_id: 'C0FB', thread_ts: threadTs, owner_user_id: 'UOWNER' }).returning('id').executeTakeFirstOrThrow();
  const trigger = await handle.db.insertInto('triggers').values({ team_id: TEAM, chat_id: chat.id, kind: 'mention', dedupe_key: `fb:${threadTs}`, payload: '{}' }).returning('id').executeTakeFirstOrThrow();
  const turn = await handle.db.insertInto('turns').values({ team_id: TEAM, chat_id: chat.id, trigger_id: trigger.id, model: 'm', cost_usd: 0 }).returning('id').executeTakeFirstOrThrow();
  const post = await createPost(handle.db, { teamId: TEAM, chatId: chat.id, turnId: turn.id, postKey: `verdict:${threadTs}`, channelId: 'C0FB', threadTs, reply: verdict });
  const poster = new SlackPoster(handle.db, createSlackClients('xoxb-test', slack.apiUrl, logger), logger);
  await poster.deliverPending(TEAM, chat.id);
  const message = slack.messages('C0FB', threadTs).find((m) => m.threadTs === threadTs)!;
  return { poster, post, turnId: turn.id, message, threadTs };
}

const types = (blocks: unknown[] | undefined) => (blocks ?? []).map((b) => (b as { type: string }).type);
const feedbackButtons = (blocks: unknown[] | undefined) =>
  (blocks ?? []).flatMap((b) => ((b as { elements?: Array<{ action_id?: string; value?: string; type: string }> }).elements ?? []).filter((e) => VERDICT_FEEDBACK_PATTERN.test(e.action_id ?? '')));

describe('feedback buttons where Slack refuses them', () => {
  it('posts the verdict with plain 👍 / 👎 buttons, keeping everything else, and a vote on it is recorded', async () => {
    const { message, turnId, threadTs } = await deliverVerdict(refusing);
    const attempts = refusing.callsTo('chat.postMessage');
    expect(attempts.map((c) => [c.status, (c.response as { error?: string }).error ?? 'ok'])).toEqual([[200, 'invalid_blocks'], [200, 'ok']]);
    expect(types(message.blocks)).not.toContain('context_actions');
    expect(types(message.blocks)).toContain('table');
    const plain = feedbackButtons(message.blocks);
    expect(plain.map((e) => [e.type, e.value])).toEqual([['button', 'positive'], ['button', 'negative']]);
    // The next-step button is still there, after the feedback.
    const kinds = types(message.blocks);
    expect(kinds.lastIndexOf('actions')).toBeGreaterThan(kinds.indexOf('table'));
    expect(refusing.violations).toEqual([]);

    const vote = await recordVerdictVote(handle.db, { teamId: TEAM, channelId: 'C0FB', messageTs: message.ts, threadTs, userId: 'UREADER', vote: 'negative' });
    expect(vote).toMatchObject({ outcome: 'recorded', turnId });
  });

  it('updates the message after a choice with the plain buttons again, not failing on the refused block', async () => {
    const { poster, post, message } = await deliverVerdict(refusing);
    await sql`update button_choices set claimed_by = 'UOWNER', claimed_at = now(),
      chosen_grant_id = (select id from button_grants g where g.post_id = ${post.id}::bigint limit 1) where post_id = ${post.id}::bigint`.execute(handle.db);
    await poster.refreshChoices(TEAM, post.id);
    const updated = refusing.messages('C0FB').find((m) => m.ts === message.ts)!;
    expect(updated.updates).toBe(1);
    expect(JSON.stringify(updated.blocks)).toContain('<@UOWNER> chose *Keep the base model*');
    expect(feedbackButtons(updated.blocks).map((e) => e.value)).toEqual(['positive', 'negative']);
    expect(refusing.callsTo('chat.update').map((c) => (c.response as { error?: string }).error ?? 'ok')).toEqual(['invalid_blocks', 'ok']);
  });

  it('where Slack takes them, posts the feedback_buttons element once, with no second attempt', async () => {
    const { message } = await deliverVerdict(accepting);
    expect(accepting.callsTo('chat.postMessage')).toHaveLength(1);
    const kinds = types(message.blocks);
    expect(kinds).toContain('context_actions');
    expect(kinds.indexOf('context_actions')).toBeGreaterThan(kinds.indexOf('table'));
    expect(kinds.indexOf('context_actions')).toBeLessThan(kinds.lastIndexOf('actions'));
    expect(feedbackButtons(message.blocks).map((e) => e.type)).toEqual(['feedback_buttons']);
    expect(accepting.violations).toEqual([]);
  });
});
