// End to end: a mention becomes a durable chat answered in its thread, once, whatever Slack or the model do.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { allText, text, type Script } from '../kit/fakes/anthropic/index.js';
import { postToBolt, sendEvent, appMention } from '../kit/fakes/slack/index.js';
import { signSlackRequest } from '../kit/signing.js';
import { CHANNEL, startHarness, TEAM, type Harness } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';

/** Answers with how many user messages the request carries and echoes the newest one. */
const echoScript: Script = (req) => {
  const users = req.messages.filter((m) => m.role === 'user');
  const last = allText({ ...req, system: [], messages: [users.at(-1)!] });
  return { content: [text(`I have seen ${users.length} message(s). You said: ${last.split('\n').pop()}`)] };
};

describe('a Slack thread is a durable chat with the agent', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script: echoScript });
  });
  afterAll(async () => {
    await h?.stop();
  });
  beforeEach(() => {
    h.model.setScript(echoScript);
  });

  it('answers a mention in its thread, mentioning the person, and remembers the thread', async () => {
    const mention = await h.mention({ user: 'UALICE', text: '<@UBOT> hello there' });
    expect(mention.status).toBe(200);
    const [first] = await h.waitForPosts(mention.ts, 1);
    expect(first!.text).toContain('<@UALICE>');
    expect(first!.text).toContain('I have seen 1 message(s)');
    expect(first!.text).toContain('hello there');

    const reply = await h.reply({ user: 'UALICE', text: 'and a follow-up', threadTs: mention.ts });
    expect(reply.status).toBe(200);
    const posts = await h.waitForPosts(mention.ts, 2);
    expect(posts[1]!.text).toContain('I have seen 2 message(s)');
    // The second request carried the first exchange, loaded from Postgres.
    const lastRequest = h.model.requests.at(-1)!.body;
    expect(JSON.stringify(lastRequest.messages)).toContain('hello there');
    expect(lastRequest.messages.filter((m) => m.role === 'assistant')).toHaveLength(1);
  });

  it('keeps the system prompt and tools byte-identical across turns, with cache breakpoints', async () => {
    const requests = h.model.requests.filter((r) => r.status === 200);
    expect(requests.length).toBeGreaterThanOrEqual(2);
    const system = requests.map((r) => JSON.stringify(r.body.system));
    expect(new Set(system).size).toBe(1);
    expect(new Set(requests.map((r) => JSON.stringify(r.body.tools ?? []))).size).toBe(1);
    expect(system[0]).toContain('"cache_control":{"type":"ephemeral"}');
  });

  it('stores each turn with its token usage and price', async () => {
    const turns = await h.db.db.selectFrom('turns').selectAll().where('team_id', '=', TEAM).orderBy('id').execute();
    expect(turns.length).toBeGreaterThanOrEqual(2);
    for (const turn of turns) {
      expect(turn.status).toBe('completed');
      expect(turn.input_tokens + turn.cache_read_tokens + turn.cache_write_tokens).toBeGreaterThan(0);
      expect(turn.output_tokens).toBeGreaterThan(0);
      expect(Number(turn.cost_usd)).toBeGreaterThan(0);
    }
    // The second turn reads the cached system prompt written by the first.
    expect(turns[1]!.cache_read_tokens).toBeGreaterThan(0);
    const messages = await h.db.db.selectFrom('messages').select(['role', 'content']).where('team_id', '=', TEAM).execute();
    expect(messages.map((m) => m.role)).toEqual(expect.arrayContaining(['user', 'assistant']));
  });

  it('ignores its own messages and other bots', async () => {
    const mention = await h.mention({ user: 'UBOB', text: '<@UBOT> start' });
    await h.waitForPosts(mention.ts, 1);
    const before = h.model.requests.length;
    const botEvent = { ...appMention({ user: 'UBOT', text: 'my own reply', channel: CHANNEL, threadTs: mention.ts }), type: 'message', bot_id: 'BBOT' };
    await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, botEvent, { teamId: TEAM });
    const otherBot = { ...botEvent, user: 'UOTHER', bot_id: 'BOTHER', subtype: 'bot_message', ts: `${Number(mention.ts) + 5}` };
    await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, otherBot, { teamId: TEAM });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(h.model.requests.length).toBe(before);
    expect(h.posts(mention.ts)).toHaveLength(1);
  });

  it('answers a redelivered event exactly once', async () => {
    const mention = await h.mention({ user: 'UCAROL', text: '<@UBOT> once please' });
    const event = appMention({ user: 'UCAROL', text: '<@UBOT> once please', channel: CHANNEL, ts: mention.ts });
    for (const retryNum of [1, 2]) {
      const redelivery = await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, event, {
        teamId: TEAM,
        eventId: mention.eventId,
        retryNum,
        retryReason: 'http_timeout',
      });
      expect(redelivery.status).toBe(200);
    }
    await h.waitForPosts(mention.ts, 1);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(h.posts(mention.ts)).toHaveLength(1);
    const triggers = await h.db.db.selectFrom('triggers').selectAll().where('team_id', '=', TEAM).where('dedupe_key', '=', `msg:${CHANNEL}:${mention.ts}`).execute();
    expect(triggers).toHaveLength(1);
  });

  it('rejects unsigned and stale-signed requests and stores nothing', async () => {
    const count = async () =>
      Number((await h.db.db.selectFrom('triggers').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
    const before = await count();
    const event = appMention({ user: 'UEVE', text: '<@UBOT> sneaky', channel: CHANNEL });
    const envelope = JSON.stringify({ type: 'event_callback', team_id: TEAM, event, event_id: 'EvSNEAKY', event_time: 1 });
    const unsigned = await postToBolt(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, envelope, 'application/json', { unsigned: true });
    expect(unsigned.status).toBe(401);
    const staleTs = Math.floor(Date.now() / 1000) - 60 * 10;
    const stale = await postToBolt(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, envelope, 'application/json', {
      timestamp: staleTs,
      signature: signSlackRequest(h.env.SLACK_SIGNING_SECRET!, staleTs, envelope),
    });
    expect(stale.status).toBe(401);
    const wrong = await postToBolt(`${h.url()}/slack/events`, 'not-the-secret', envelope, 'application/json');
    expect(wrong.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await count()).toBe(before);
  });

  it('retries the model API through failures and answers once', async () => {
    h.model.failNext(2, { status: 529, type: 'overloaded_error' });
    const mention = await h.mention({ user: 'UDAVE', text: '<@UBOT> are you there?' });
    const posts = await h.waitForPosts(mention.ts, 1);
    expect(posts[0]!.text).toContain('You said');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(h.posts(mention.ts)).toHaveLength(1);
  });

  it('tells the thread once when the model API stays down, and the next message retries', async () => {
    h.model.failFor(60_000, { status: 529, type: 'overloaded_error' });
    const mention = await h.mention({ user: 'UFRAN', text: '<@UBOT> first try' });
    const [failure] = await h.waitForPosts(mention.ts, 1);
    expect(failure!.text).toContain('<@UFRAN>');
    expect(failure!.text).toMatch(/couldn't reach the model/i);
    expect(JSON.stringify(failure!.blocks)).toContain('Retry');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(h.posts(mention.ts)).toHaveLength(1);

    h.model.reset();
    h.model.setScript(echoScript);
    await h.reply({ user: 'UFRAN', text: 'second try', threadTs: mention.ts });
    const posts = await h.waitForPosts(mention.ts, 2);
    expect(posts[1]!.text).toContain('second try');
    // Nothing was lost: the request that answered carries both messages (merged into one user turn).
    const answered = JSON.stringify(h.model.requests.filter((r) => r.status === 200).at(-1)!.body.messages);
    expect(answered).toContain('first try');
    expect(answered).toContain('second try');
  });

  it('answers health checks', async () => {
    const res = await fetch(`${h.url()}/healthz`);
    expect(res.status).toBe(200);
  });
});

describe('a turn interrupted by a crash', () => {
  let h: Harness;
  afterAll(async () => {
    await h?.stop();
  });

  it('completes after restart with exactly one answer', async () => {
    let release: (() => void) | undefined;
    const slowScript: Script = (req, ctx) => {
      if (ctx.callIndex === 0) {
        // Hang the first call until the process is killed.
        return new Promise((resolve) => {
          release = () => resolve({ content: [text('too late')] });
        });
      }
      return echoScript(req, ctx);
    };
    h = await startHarness({ script: slowScript, mode: 'process' });
    const mention = await h.mention({ user: 'UGUS', text: '<@UBOT> survive this' });
    await waitUntil(() => (h.model.requests.length >= 1 ? true : undefined), 20_000, 'the first model call');
    await h.kill();
    release?.();
    await h.restart();
    const posts = await h.waitForPosts(mention.ts, 1, 40_000);
    expect(posts[0]!.text).toContain('survive this');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(h.posts(mention.ts)).toHaveLength(1);
    const logs = await h.logs();
    expect(logs).toContain('unlocking jobs of workers that stopped heart-beating');
  }, 90_000);
});
