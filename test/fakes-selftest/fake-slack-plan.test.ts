// The fake Slack knows the plan and task card blocks and chat.update's tier: it takes what Slack's
// reference allows, refuses the rest with invalid_blocks, records each state of a plan message, and
// answers an update burst beyond tier 3 with 429 and Retry-After.
import { WebClient } from '@slack/web-api';
import { silentWebApiLogger as silent } from '../kit/fakes/slack/web-client.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';


const task = (id: string, status: string, extra: Record<string, unknown> = {}) => ({ type: 'task_card', task_id: id, title: `Step ${id}`, status, ...extra });
const rich = (text: string) => ({ type: 'rich_text', elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text }] }] });
const plan = (tasks: unknown[], title = 'The plan') => ({ type: 'plan', title, tasks });

describe('fake Slack: plan and task card blocks', () => {
  let slack: FakeSlack | undefined;
  afterEach(async () => {
    await slack?.stop();
    slack = undefined;
  });

  const client = (s: FakeSlack) => new WebClient('xoxb-test', { slackApiUrl: s.apiUrl, logger: silent, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });

  it('takes a plan of task cards, records each state of the message, and a text-only rewrite', async () => {
    slack = await startFakeSlack();
    const web = client(slack);
    const posted = await web.chat.postMessage({
      channel: 'C1',
      thread_ts: '1733150000.000100',
      text: 'plan',
      blocks: [plan([task('a', 'in_progress', { details: rich('3 of 10'), sources: [{ type: 'url', url: 'http://x/runs/1', text: 'run' }] }), task('b', 'pending')])] as never,
    });
    await web.chat.postMessage({ channel: 'C1', thread_ts: '1733150000.000100', text: 'a step report' });
    await web.chat.update({ channel: 'C1', ts: String(posted.ts), text: 'plan', blocks: [plan([task('a', 'complete'), task('b', 'in_progress')], 'The plan: 1 of 2')] as never });
    await web.chat.update({ channel: 'C1', ts: String(posted.ts), text: 'plan as text', blocks: [] });
    const states = slack.planStates({ threadTs: '1733150000.000100' });
    expect(states.map((s) => [s.method, s.ts, s.title, s.tasks.map((t) => `${t.taskId}:${t.status}`)])).toEqual([
      ['chat.postMessage', posted.ts, 'The plan', ['a:in_progress', 'b:pending']],
      ['chat.update', posted.ts, 'The plan: 1 of 2', ['a:complete', 'b:in_progress']],
      ['chat.update', posted.ts, undefined, []],
    ]);
    expect(states[0]!.tasks[0]).toMatchObject({ detail: '3 of 10', sources: ['http://x/runs/1'] });
    expect(states[2]!.text).toBe('plan as text');
    expect(slack.violations).toEqual([]);
  });

  it('refuses what the block reference does not allow, naming each problem', async () => {
    slack = await startFakeSlack();
    const web = client(slack);
    const bad: Array<[unknown, string]> = [
      [plan([task('a', 'done')]), 'task_card status must be pending, in_progress, complete or error'],
      [plan([{ type: 'task_card', title: 'no id', status: 'pending' }]), 'task_card task_id is required'],
      [plan([{ type: 'section', text: { type: 'mrkdwn', text: 'x' } }]), 'plan tasks must be task_card blocks'],
      [plan([task('a', 'pending'), task('a', 'pending')]), 'task_id a is not unique'],
      [plan([task('a', 'pending', { details: { type: 'mrkdwn', text: 'x' } })]), 'task_card details must be a rich_text block'],
      [plan([task('a', 'pending', { sources: [{ type: 'url', url: 'http://x' }] })]), 'a source must be a url element with a url and a text'],
      [{ type: 'plan', tasks: [] }, 'plan title is required plain text'],
      [task('a', 'pending', { details: rich('x'), title: '' }), 'task_card title is required plain text'],
    ];
    for (const [block, problem] of bad) {
      await expect(web.chat.postMessage({ channel: 'C2', text: 'x', blocks: [block] as never })).rejects.toMatchObject({ data: { error: 'invalid_blocks' } });
      expect(slack.violations.at(-1)).toContain(problem);
    }
    expect(slack.messages('C2')).toHaveLength(0);
    expect(slack.planStates()).toEqual([]);
  });

  it('holds chat.update to tier 3 per workspace: a burst is recorded, and refused with Retry-After when enforced', async () => {
    slack = await startFakeSlack({ enforceRateLimit: true, updateRateLimit: { max: 3, windowMs: 60_000 } });
    const web = client(slack);
    const posted = await web.chat.postMessage({ channel: 'C3', text: 'x' });
    for (let i = 0; i < 3; i += 1) await web.chat.update({ channel: 'C3', ts: String(posted.ts), text: `v${i}` });
    await expect(web.chat.update({ channel: 'C3', ts: String(posted.ts), text: 'too many' })).rejects.toMatchObject({
      code: 'slack_webapi_rate_limited_error',
      retryAfter: 60,
    });
    expect(slack.messages('C3')[0]!.text).toBe('v2');
    expect(slack.violations).toEqual([expect.stringContaining('chat.update: more than 3 calls in T0FAKE within 60000 ms (tier 3)')]);
  });
});
