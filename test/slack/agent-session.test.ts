// agents.sessions.setStatus against the fake Slack: order, latest-wins per thread, pacing per
// workspace, `ratelimited` retried after Retry-After, any other failure logged and never thrown.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentSessions, SESSION_STATUS_INTERVAL_MS } from '../../src/slack/agent-session.js';
import { createSlackClients } from '../../src/slack/poster.js';
import type { Chat } from '../../src/store/tables.js';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { captureLogs } from '../kit/log-capture.js';

const CHANNEL = 'C0SESS';

function chat(threadTs: string, teamId = 'T0FAKE'): Chat {
  return { id: '1', team_id: teamId, channel_id: CHANNEL, thread_ts: threadTs, owner_user_id: 'UOWNER' } as Chat;
}

function setup(slack: FakeSlack) {
  const { logger, lines } = captureLogs();
  const sleeps: number[] = [];
  // Recorded, not waited: the test checks the pacing the module asks for without depending on timing.
  const sessions = new AgentSessions(createSlackClients('xoxb-test', slack.apiUrl, logger).writer, logger, {
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
  });
  return { sessions, sleeps, lines };
}

describe('AgentSessions', () => {
  let slack: FakeSlack;
  beforeAll(async () => {
    slack = await startFakeSlack();
  });
  beforeEach(() => {
    slack.reset();
    slack.seedMessage({ channel: CHANNEL, ts: '1000.000100', user: 'UOWNER', text: 'a' });
    slack.seedMessage({ channel: CHANNEL, ts: '1000.000200', user: 'UOWNER', text: 'b' });
  });
  afterAll(() => slack.stop());

  it("sends a workspace's statuses in order, one per interval, the latest of a thread replacing one not sent yet", async () => {
    const { sessions, sleeps } = setup(slack);
    sessions.set(chat('1000.000100'), 'processing');
    sessions.set(chat('1000.000200'), 'processing');
    sessions.set(chat('1000.000200'), 'suspended');
    sessions.set(chat('1000.000100'), 'closed');
    await sessions.idle();
    const calls = slack.callsTo('agents.sessions.setStatus').map((c) => [c.args.thread_ts, c.args.status]);
    // The first went out at once; the queued ones collapsed to each thread's latest.
    expect(calls).toEqual([
      ['1000.000100', 'processing'],
      ['1000.000200', 'suspended'],
      ['1000.000100', 'closed'],
    ]);
    expect(sleeps).toHaveLength(2);
    for (const ms of sleeps) expect(ms).toBeGreaterThan(SESSION_STATUS_INTERVAL_MS - 200);
    expect(slack.session(CHANNEL, '1000.000100')).toMatchObject({ status: 'closed', initiatorUserId: 'UOWNER', history: ['processing', 'closed'] });
    expect(slack.violations).toEqual([]);
  });

  it('retries `ratelimited` after the Retry-After Slack gives, up to 3 times', async () => {
    const { sessions, sleeps } = setup(slack);
    slack.failNext('agents.sessions.setStatus', 3, { status: 429, retryAfter: 2 });
    sessions.set(chat('1000.000100'), 'processing');
    await sessions.idle();
    expect(slack.callsTo('agents.sessions.setStatus').map((c) => c.status)).toEqual([429, 429, 429, 200]);
    expect(sleeps).toEqual([2000, 2000, 2000]);
    expect(slack.session(CHANNEL, '1000.000100')?.status).toBe('processing');
  });

  it('once closed (the process stopping), drops what is queued and logs nothing more', async () => {
    const { sessions, lines } = setup(slack);
    slack.failNext('agents.sessions.setStatus', 1, { status: 429, retryAfter: 1 });
    sessions.set(chat('1000.000100'), 'processing');
    sessions.set(chat('1000.000200'), 'processing');
    sessions.close();
    sessions.set(chat('1000.000200'), 'closed');
    await sessions.idle();
    // The call already on its way was answered 429; nothing was retried or sent after the close.
    expect(slack.callsTo('agents.sessions.setStatus').map((c) => c.status)).toEqual([429]);
    expect(lines.filter((l) => String(l.msg).includes('agents.sessions.setStatus') || l.msg === 'could not set the agent session status')).toEqual([]);
  });

  it('gives up after the third retry, and logs any other failure without throwing', async () => {
    const { sessions, lines } = setup(slack);
    slack.failNext('agents.sessions.setStatus', 4, { status: 429, retryAfter: 1 });
    sessions.set(chat('1000.000100'), 'processing');
    await sessions.idle();
    expect(slack.callsTo('agents.sessions.setStatus')).toHaveLength(4);
    slack.failNext('agents.sessions.setStatus', 1, { status: 200, error: 'channel_not_found' });
    sessions.set(chat('1000.000200'), 'closed');
    await sessions.idle();
    const failures = lines.filter((l) => l.msg === 'could not set the agent session status');
    expect(failures.map((l) => l.error)).toEqual(['slack_webapi_rate_limited_error', 'channel_not_found']);
    expect(slack.session(CHANNEL, '1000.000200')).toBeUndefined();
  });
});
