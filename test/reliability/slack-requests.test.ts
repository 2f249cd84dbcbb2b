// /slack/events under hostile requests, against the real entry point: oversized bodies, signed null payloads, oversized mentions.
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { INBOUND_LIMITS } from '../../src/slack/limits.js';
import { allText, text } from '../kit/fakes/anthropic/index.js';
import { appMention, blockActionPayload, eventEnvelope, postToBolt } from '../kit/fakes/slack/index.js';
import { signSlackRequest } from '../kit/signing.js';
import { CHANNEL, startHarness, TEAM, type Harness } from '../kit/harness.js';

const OWNER = 'UOWNER1';

/** Rows in the tables a Slack request can write to. */
async function storedRows(h: Harness): Promise<Record<string, number>> {
  const tables = ['chats', 'triggers', 'button_choices', 'button_grants', 'verdict_feedback'] as const;
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const row = await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(h.db.db);
    counts[table] = Number(row.rows[0]!.n);
  }
  return counts;
}

/** The bot process's resident memory, from /proc. */
async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024);
}

/**
 * Sends `body` (or `totalBytes` of filler) in 1 MiB chunks, declaring its length or chunked, and
 * stops writing once the bot answers; returns the status and how many bytes were written by then.
 */
function streamBody(
  url: string,
  input: { totalBytes?: number; body?: Buffer; declareLength: boolean; headers?: Record<string, string> },
): Promise<{ status: number; sentBytes: number }> {
  const filler = Buffer.alloc(1024 * 1024, 'a');
  const total = input.body?.length ?? input.totalBytes ?? 0;
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...input.headers,
        ...(input.declareLength ? { 'content-length': String(total) } : { 'transfer-encoding': 'chunked' }),
      },
    });
    req.on('response', (res) => {
      answered = true;
      res.resume();
      resolve({ status: res.statusCode ?? 0, sentBytes: sent });
      req.destroy();
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const write = () => {
      while (!answered && sent < total) {
        const chunk = input.body ? input.body.subarray(sent, sent + filler.length) : filler.subarray(0, Math.min(filler.length, total - sent));
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', write);
          return;
        }
      }
      if (!answered) req.end();
    };
    write();
  });
}

describe('/slack/events against hostile requests (the bot as its own process)', () => {
  let h: Harness;
  let pid: number;
  const report: string[] = [];

  beforeAll(async () => {
    h = await startHarness({
      mode: 'process',
      script: (req) => {
        const last = allText({ ...req, system: [], messages: [req.messages.at(-1)!] });
        return { content: [text(`Read ${last.length} characters.`)] };
      },
    });
    const ready = (await h.logs()).split('\n').find((line) => line.includes('"bot ready"'));
    pid = Number((JSON.parse(ready!) as { pid: number }).pid);
  }, 90_000);

  afterAll(async () => {
    console.log(`[slack-requests] ${report.join('; ')}`);
    await h?.stop();
  });

  it('an unsigned 200 MB body is answered 413 before it is read, declared or chunked; memory stays flat', async () => {
    const url = `${h.url()}/slack/events`;
    const before = await rssMb(pid);
    const declared = await streamBody(url, { totalBytes: 200 * 1024 * 1024, declareLength: true });
    const chunked = await streamBody(url, { totalBytes: 200 * 1024 * 1024, declareLength: false });
    const after = await rssMb(pid);
    report.push(`200 MB unsigned body: ${declared.status} after ${declared.sentBytes >> 20} MiB written (declared length), ${chunked.status} after ${chunked.sentBytes >> 20} MiB (chunked); bot RSS ${before} -> ${after} MB`);
    expect(declared.status).toBe(413);
    expect(chunked.status).toBe(413);
    expect(after - before).toBeLessThan(64);
    // An upload abandoned halfway leaves nothing behind either.
    await new Promise<void>((resolve) => {
      const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '500000' } });
      req.on('error', () => resolve());
      req.write(Buffer.alloc(100_000, 'a'), () => setTimeout(() => (req.destroy(), resolve()), 100));
    });
    expect((await fetch(`${h.url()}/healthz`)).status).toBe(200);
    expect(h.crashes).toEqual([]);
  }, 120_000);

  it('signed null and other non-object payloads are a 400, never a crash; the bot keeps answering', async () => {
    const url = `${h.url()}/slack/events`;
    const secret = h.env.SLACK_SIGNING_SECRET!;
    const cases: Array<[string, 'application/json' | 'application/x-www-form-urlencoded']> = [
      ['null', 'application/json'],
      ['payload=null', 'application/x-www-form-urlencoded'],
      ['[]', 'application/json'],
      ['42', 'application/json'],
      ['"text"', 'application/json'],
      ['payload=%5B1%5D', 'application/x-www-form-urlencoded'],
      ['payload=true', 'application/x-www-form-urlencoded'],
      ['payload=a&payload=b', 'application/x-www-form-urlencoded'],
      ['{not json', 'application/json'],
    ];
    const statuses: number[] = [];
    for (const [body, type] of cases) statuses.push((await postToBolt(url, secret, body, type)).status);
    report.push(`signed malformed bodies (${cases.map(([b]) => b).join(', ')}): ${statuses.join(' ')}`);
    expect(statuses).toEqual(cases.map(() => 400));
    // Bolt throws for a method or path it does not serve; that must not reach the process either.
    const unserved = [(await fetch(url)).status, (await fetch(`${h.url()}/slack/other`, { method: 'POST', body: '{}' })).status];
    report.push(`GET /slack/events, POST /slack/other: ${unserved.join(' ')}`);
    expect(unserved).toEqual([404, 404]);
    expect(h.crashes).toEqual([]);
    expect((await fetch(`${h.url()}/healthz`)).status).toBe(200);
    const m = await h.mention({ user: OWNER, text: '<@UBOT> still there?' });
    expect(m.status).toBe(200);
    await h.waitForPosts(m.ts, 1, 30_000);
  }, 60_000);

  it('signed bodies with fields missing, of the wrong type or null: 400 with one warning line each, nothing stored, never a 500', async () => {
    const url = `${h.url()}/slack/events`;
    const secret = h.env.SLACK_SIGNING_SECRET!;
    const mention = eventEnvelope(appMention({ user: OWNER, text: '<@UBOT> hello', channel: CHANNEL, team: TEAM }), { teamId: TEAM });
    const click = blockActionPayload({ user: OWNER, teamId: TEAM, channel: CHANNEL, actionId: ACTION_IDS.nextStep, value: 'x', threadTs: '1700000000.000100' });
    const { user: _user, ...clickWithoutUser } = click;
    const form = (payload: unknown) => ['payload=' + encodeURIComponent(JSON.stringify(payload)), 'application/x-www-form-urlencoded'] as const;
    const json = (payload: unknown) => [JSON.stringify(payload), 'application/json'] as const;
    const cases: Array<[string, readonly [string, 'application/json' | 'application/x-www-form-urlencoded']]> = [
      ['block_actions without a user', form(clickWithoutUser)],
      ['actions as a string', form({ ...click, actions: ACTION_IDS.nextStep })],
      ['actions: []', form({ ...click, actions: [] })],
      ['an action value as a number', form({ ...click, actions: [{ type: 'button', action_id: ACTION_IDS.nextStep, value: 5 }] })],
      ['user: null', form({ ...click, user: null })],
      ['channel: null', form({ ...click, channel: null })],
      ['"event": null', json({ ...mention, event: null })],
      ['event.user: null', json({ ...mention, event: { ...(mention.event as object), user: null } })],
      ['the mention ts as a number', json({ ...mention, event: { ...(mention.event as object), ts: 1700000000 } })],
      ['the mention text as an object', json({ ...mention, event: { ...(mention.event as object), text: { t: 1 } } })],
      ['no team_id', json({ ...mention, team_id: undefined })],
      ['view_submission with view null', form({ type: 'view_submission', user: { id: OWNER }, team: { id: TEAM }, view: null })],
    ];
    const before = await storedRows(h);
    const warningsBefore = (await h.logs()).split('\n').filter((line) => line.includes('"malformed Slack request refused"')).length;
    const answers: Array<{ status: number; body: string }> = [];
    for (const [, [body, type]] of cases) answers.push(await postToBolt(url, secret, body, type));
    report.push(`signed bodies with fields missing, mistyped or null (${cases.length}): ${answers.map((a) => a.status).join(' ')}`);
    expect(answers.map((a) => a.status)).toEqual(cases.map(() => 400));
    expect(answers[0]!.body).toBe(JSON.stringify({ error: 'malformed request: block_actions payload: user: Invalid input: expected object, received undefined' }));
    expect(answers[6]!.body).toBe(JSON.stringify({ error: 'malformed request: event_callback payload: event: Invalid input: expected object, received null' }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await storedRows(h)).toEqual(before);
    const logs = (await h.logs()).split('\n');
    expect(logs.filter((line) => line.includes('"malformed Slack request refused"')).length - warningsBefore).toBe(cases.length);
    expect(logs.filter((line) => line.includes('"slack listener failed"'))).toEqual([]);
    expect(h.crashes).toEqual([]);

    // The same bodies well formed are taken: the check refuses only what is malformed.
    const ts = String((mention.event as { ts: string }).ts);
    h.slack.seedMessage({ channel: CHANNEL, user: OWNER, text: '<@UBOT> hello', ts });
    expect((await postToBolt(url, secret, ...json(mention))).status).toBe(200);
    expect((await postToBolt(url, secret, ...form(click))).status).toBe(200);
    await h.waitForPosts(ts, 1, 30_000);
  }, 60_000);

  it('a 10 MB mention is refused at the door; one just under the body cap reaches the model bounded, with a note', async () => {
    const event = appMention({ user: OWNER, text: `<@UBOT> ${'x'.repeat(10 * 1024 * 1024)}`, channel: CHANNEL, team: TEAM });
    const body = JSON.stringify({ type: 'event_callback', team_id: TEAM, event, event_id: 'EvHUGE', event_time: Math.floor(Date.now() / 1000) });
    const ts = Math.floor(Date.now() / 1000);
    const signed = { 'x-slack-request-timestamp': String(ts), 'x-slack-signature': signSlackRequest(h.env.SLACK_SIGNING_SECRET!, ts, body) };
    const big = await streamBody(`${h.url()}/slack/events`, { body: Buffer.from(body), declareLength: true, headers: signed });
    expect(big.status).toBe(413);
    const requestsBefore = h.model.requests.length;
    const nearText = `<@UBOT> ${'lorem ipsum '.repeat(Math.floor((INBOUND_LIMITS.requestBodyBytes - 4096) / 12 / 2))}`;
    const near = await h.mention({ user: OWNER, text: nearText });
    expect(near.status).toBe(200);
    await h.waitForPosts(near.ts, 1, 30_000);
    const sent = h.model.requests.slice(requestsBefore);
    const largest = Math.max(...sent.map((r) => r.bytes));
    report.push(`10 MB mention: ${big.status}; ${Math.round(nearText.length / 1000)},000-character mention: largest model request ${largest} B`);
    expect(JSON.stringify(sent.at(-1)!.body)).toContain('more characters cut: the bot reads at most 40000');
    expect(largest).toBeLessThan(INBOUND_LIMITS.messageText * 2 + 30_000);
    expect(h.crashes).toEqual([]);
  }, 60_000);
});
