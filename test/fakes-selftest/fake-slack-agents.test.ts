// The fake Slack's agent sessions, through the real WebClient: what Slack documents for
// agents.sessions.setStatus is accepted, what it would reject is rejected, and Stop exists only while processing.
import { WebClient } from '@slack/web-api';
import { silentWebApiLogger as silent } from '../kit/fakes/slack/web-client.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';

const CHANNEL = 'C0AGENT';
const THREAD = '1700.000100';

describe('fake Slack: agent sessions', () => {
  let slack: FakeSlack;
  let client: WebClient;
  beforeAll(async () => {
    slack = await startFakeSlack();
    client = new WebClient('xoxb-test', { slackApiUrl: slack.apiUrl, logger: silent, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
  });
  beforeEach(() => {
    slack.reset();
    slack.seedMessage({ channel: CHANNEL, ts: THREAD, user: 'UOWNER', text: 'hi' });
  });
  afterAll(() => slack.stop());

  it('creates the session of a thread on the first status and updates it after', async () => {
    const created = await client.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'processing', title: 'Benchmark 104', initiator_user_id: 'UOWNER' });
    expect(created).toMatchObject({ ok: true, status: 'processing', title: 'Benchmark 104' });
    await client.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'closed', title: 'ignored once the session exists' });
    expect(slack.session(CHANNEL, THREAD)).toMatchObject({ status: 'closed', title: 'Benchmark 104', initiatorUserId: 'UOWNER', history: ['processing', 'closed'] });
    expect(slack.violations).toEqual([]);
  });

  it.each([
    [{ channel_id: CHANNEL, thread_ts: THREAD, status: 'busy' }, 'invalid_arguments', /status "busy" is not one of active, processing, suspended, closed/],
    [{ channel_id: CHANNEL, thread_ts: THREAD, status: '' }, 'invalid_arguments', /status is required/],
    [{ channel_id: CHANNEL, status: 'processing' }, 'invalid_arguments', /thread_ts is required/],
    [{ channel_id: CHANNEL, thread_ts: THREAD, status: 'processing', title: 'x'.repeat(201) }, 'invalid_arguments', /title is 201 characters \(max 200\)/],
  ])('rejects what Slack rejects: %j', async (args, error, violation) => {
    await expect(client.agents.sessions.setStatus(args as never)).rejects.toMatchObject({ data: { ok: false, error } });
    expect(slack.violations.join('\n')).toMatch(violation);
    expect(slack.session(CHANNEL, THREAD)).toBeUndefined();
  });

  it('needs chat:write.customize for an icon or a name, and assistant:write when the scopes are known', async () => {
    await expect(client.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'processing', icon_emoji: ':robot_face:' })).rejects.toMatchObject({
      data: { error: 'missing_scope', needed: 'chat:write.customize' },
    });
    const scoped = await startFakeSlack({ scopes: ['chat:write'] });
    try {
      const other = new WebClient('xoxb-test', { slackApiUrl: scoped.apiUrl, logger: silent, retryConfig: { retries: 0 } });
      await expect(other.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'processing' })).rejects.toMatchObject({
        data: { error: 'missing_scope', needed: 'assistant:write' },
      });
    } finally {
      await scoped.stop();
    }
  });

  it("warns when the app does not subscribe to agent_session_stopped, as Slack does", async () => {
    const unsubscribed = await startFakeSlack({ agentStopSubscribed: false });
    try {
      const other = new WebClient('xoxb-test', { slackApiUrl: unsubscribed.apiUrl, logger: silent, retryConfig: { retries: 0 } });
      const answer = await other.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'processing' });
      expect(answer.warning).toBe('missing_agent_session_stopped_event_subscription');
    } finally {
      await unsubscribed.stop();
    }
  });

  it('shows Stop only while the session is processing; a click is an agent_session_stopped event', async () => {
    expect(() => slack.pressStop({ channel: CHANNEL, threadTs: THREAD, user: 'UOWNER' })).toThrow(/has no agent session/);
    await client.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'processing' });
    const event = slack.pressStop({ channel: CHANNEL, threadTs: THREAD, user: 'UOWNER' });
    expect(event).toMatchObject({ type: 'agent_session_stopped', channel: CHANNEL, thread_ts: THREAD, user: 'UOWNER', streaming_message_ts: [] });
    expect(typeof event.event_ts).toBe('string');
    await client.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'suspended' });
    expect(() => slack.pressStop({ channel: CHANNEL, threadTs: THREAD, user: 'UOWNER' })).toThrow(/Slack shows Stop only while processing/);
  });

  it('answers a burst above Tier 3 (50 a minute) with ratelimited when enforcing, and records it', async () => {
    const strict = await startFakeSlack({ enforceRateLimit: true });
    try {
      strict.seedMessage({ channel: CHANNEL, ts: THREAD, user: 'UOWNER', text: 'hi' });
      const other = new WebClient('xoxb-test', { slackApiUrl: strict.apiUrl, logger: silent, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
      for (let i = 0; i < 50; i += 1) await other.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'processing' });
      await expect(other.agents.sessions.setStatus({ channel_id: CHANNEL, thread_ts: THREAD, status: 'closed' })).rejects.toMatchObject({ code: 'slack_webapi_rate_limited_error', retryAfter: 1 });
      expect(strict.violations).toEqual(['agents.sessions.setStatus: more than 50 calls in 60000 ms for T0FAKE (Tier 3)']);
    } finally {
      await strict.stop();
    }
  });
});
