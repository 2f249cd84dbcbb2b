// Hostile-input scenarios: forged and replayed webhooks and Slack requests, prompt injection, oversized inputs.
import fc from 'fast-check';
import { sql } from 'kysely';
import { webhookHeaders } from '@verdict/contract/webhooks';
import { allText, text, type Script } from '../test/kit/fakes/anthropic/index.js';
import { ACTION_IDS } from '../src/slack/action-ids.js';
import { appHomeOpened, appMention, blockActionPayload, eventEnvelope, postToBolt, slackTs, threadMessage } from '../test/kit/fakes/slack/index.js';
import { signSlackRequest } from '../test/kit/signing.js';
import { CHANNEL, type Harness, sandboxCounts, startHarness, TEAM, waitForVerdict } from '../test/kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../test/kit/loop-script.js';
import { OWNER } from './faults.js';
import { Checks, type Figure } from './figure.js';
import { checkLoopThread } from './loop-checks.js';
import { sleep } from '../test/kit/wait.js';
import { type NewDatabase } from '../test/kit/database.js';

async function count(h: Harness, table: 'triggers' | 'webhook_receipts' | 'turns'): Promise<number> {
  const row = await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(h.db.db);
  return Number(row.rows[0]!.n);
}

async function postWebhook(url: string, body: string, headers: Record<string, string>): Promise<number> {
  const res = await fetch(`${url}/webhooks/platform`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  await res.arrayBuffer();
  return res.status;
}

const WEBHOOK_HEADER_NAMES = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/** Random and mutated webhook deliveries: always 4xx, nothing stored; stale replays of valid deliveries rejected. */
export async function hostileWebhooks(o: { runs: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await startHarness({ script: loopScript(), ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  const statuses = new Map<number, number>();
  let sent = 0;
  try {
    const secret = h.bot()!.sandbox!.webhookSecret;
    const before = { triggers: await count(h, 'triggers'), receipts: await count(h, 'webhook_receipts') };
    const valid = (id: string, at = Math.floor(Date.now() / 1000)) => {
      const body = JSON.stringify({ type: 'run.completed', id, created_at: new Date(at * 1000).toISOString(), data: { id: `run_${id}` } });
      return { body, headers: webhookHeaders(secret, id, at, body) as Record<string, string> };
    };
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('body'), at: fc.nat(), ch: fc.string({ minLength: 1, maxLength: 1 }) }),
      fc.record({ kind: fc.constant('header'), name: fc.constantFrom(...WEBHOOK_HEADER_NAMES), value: fc.string({ maxLength: 120 }) }),
      fc.record({ kind: fc.constant('drop'), name: fc.constantFrom(...WEBHOOK_HEADER_NAMES) }),
      fc.record({ kind: fc.constant('signature'), sig: fc.base64String({ minLength: 4, maxLength: 60 }) }),
      fc.record({ kind: fc.constant('json'), value: fc.json() }),
      fc.record({ kind: fc.constant('random'), body: fc.string({ maxLength: 400 }), headers: fc.dictionary(fc.constantFrom(...WEBHOOK_HEADER_NAMES), fc.string({ maxLength: 80 })) }),
      fc.record({ kind: fc.constant('otherSecret'), key: fc.uint8Array({ minLength: 24, maxLength: 32 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 6, maxLength: 16 }), mutation, async (suffix, m) => {
        let { body, headers } = valid(`evt_fuzz_${suffix}`);
        headers = { ...headers };
        switch (m.kind) {
          case 'body': {
            const at = m.at % body.length;
            const replacement = m.ch === body[at] ? (m.ch === 'x' ? 'y' : 'x') : m.ch;
            body = body.slice(0, at) + replacement + body.slice(at + 1);
            break;
          }
          case 'header':
            if (headers[m.name] === m.value) return;
            headers[m.name] = m.value;
            break;
          case 'drop':
            delete headers[m.name];
            break;
          case 'signature':
            headers['webhook-signature'] = `v1,${m.sig}`;
            break;
          case 'json':
            body = JSON.stringify(m.value);
            break;
          case 'random':
            body = m.body;
            headers = m.headers;
            break;
          case 'otherSecret':
            headers = webhookHeaders(`whsec_${Buffer.from(m.key).toString('base64')}`, `evt_fuzz_${suffix}`, Math.floor(Date.now() / 1000), body) as Record<string, string>;
            break;
        }
        let status: number;
        try {
          status = await postWebhook(h.url(), body, headers);
        } catch {
          status = 0;
        }
        sent += 1;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status < 400 || status >= 500) throw new Error(`mutation ${m.kind} answered ${status}`);
      }),
      { numRuns: o.runs, seed: 8 },
    );
    for (const ageSeconds of [301, 600, 3600, -600]) {
      const { body, headers } = valid(`evt_stale_${ageSeconds}`, Math.floor(Date.now() / 1000) - ageSeconds);
      const status = await postWebhook(h.url(), body, headers);
      sent += 1;
      c.equal(status, 400, `a validly signed delivery ${ageSeconds} s ${ageSeconds > 0 ? 'old' : 'in the future'}`);
    }
    const big = valid('evt_big');
    c.equal(await postWebhook(h.url(), big.body + ' '.repeat(70_000), big.headers), 413, 'a 70 kB body');
    sent += 1;
    c.equal(await count(h, 'triggers'), before.triggers, 'triggers stored by forged deliveries');
    c.equal(await count(h, 'webhook_receipts'), before.receipts, 'receipts stored by forged deliveries');
    c.equal((await fetch(`${h.url()}/healthz`)).status, 200, 'health after the fuzzing');
  } catch (error) {
    c.check(false, (error as Error).message.split('\n').slice(0, 3).join(' '));
  } finally {
    await h.stop();
  }
  return {
    fault: 'Random and mutated webhook bodies and headers',
    tried: 'fast-check: flipped body bytes, changed/dropped headers, forged signatures, other secrets, random JSON; stale (5-60 min) and future replays; 70 kB body',
    times: sent,
    held: `never a 5xx or crash; always 4xx (${[...statuses].map(([s, n]) => `${s}:${n}`).join(' ')}); 0 triggers or receipts stored`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** Slack requests unsigned, wrongly signed, stale or tampered: 401, nothing stored; a replay within tolerance: one turn. */
export async function hostileSlack(o: { runs: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await startHarness({ script: () => ({ content: [text('Hello.')] }), ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  const url = () => `${h.url()}/slack/events`;
  const secret = h.env.SLACK_SIGNING_SECRET!;
  const statuses = new Map<number, number>();
  let sent = 0;
  try {
    const before = await count(h, 'triggers');
    const kinds = fc.constantFrom('unsigned', 'wrongSecret', 'stale', 'tampered', 'garbageSignature', 'badTimestamp');
    await fc.assert(
      fc.asyncProperty(kinds, fc.string({ maxLength: 60 }), fc.integer({ min: 301, max: 86_400 }), async (kind, noise, age) => {
        const event = appMention({ user: 'UEVE', text: `<@UBOT> ${noise}`, channel: CHANNEL });
        const envelope = JSON.stringify({ type: 'event_callback', team_id: TEAM, event, event_id: `EvF${sent}`, event_time: Math.floor(Date.now() / 1000) });
        const now = Math.floor(Date.now() / 1000);
        let res;
        switch (kind) {
          case 'unsigned':
            res = await postToBolt(url(), secret, envelope, 'application/json', { unsigned: true });
            break;
          case 'wrongSecret':
            res = await postToBolt(url(), `${secret}x`, envelope, 'application/json');
            break;
          case 'stale':
            res = await postToBolt(url(), secret, envelope, 'application/json', { timestamp: now - age, signature: signSlackRequest(secret, now - age, envelope) });
            break;
          case 'tampered':
            res = await postToBolt(url(), secret, envelope.replace('UEVE', 'UOWNER'), 'application/json', { signature: signSlackRequest(secret, now, envelope) });
            break;
          case 'garbageSignature':
            res = await postToBolt(url(), secret, envelope, 'application/json', { signature: `v0=${Buffer.from(noise).toString('hex')}` });
            break;
          default:
            res = await postToBolt(url(), secret, envelope, 'application/json', { headers: { 'X-Slack-Request-Timestamp': noise || 'x' }, unsigned: true });
        }
        sent += 1;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status !== 401) throw new Error(`${kind} answered ${res.status}`);
      }),
      { numRuns: o.runs, seed: 9 },
    );
    await sleep(300);
    c.equal(await count(h, 'triggers'), before, 'triggers stored by rejected requests');

    const event = appMention({ user: OWNER, text: '<@UBOT> only once', channel: CHANNEL });
    h.slack.seedMessage({ channel: CHANNEL, user: OWNER, text: '<@UBOT> only once', ts: event.ts as string });
    const body = JSON.stringify({ type: 'event_callback', team_id: TEAM, event, event_id: 'EvREPLAY', event_time: Math.floor(Date.now() / 1000), authorizations: [{ team_id: TEAM, user_id: 'UBOT', is_bot: true }] });
    const ts = Math.floor(Date.now() / 1000);
    const signature = signSlackRequest(secret, ts, body);
    for (let i = 0; i < 5; i += 1) {
      const res = await postToBolt(url(), secret, body, 'application/json', { timestamp: ts, signature });
      sent += 1;
      c.equal(res.status, 200, `replay ${i} within the tolerance`);
    }
    await h.waitForPosts(event.ts as string, 1, 20_000);
    await sleep(1500);
    c.equal(h.posts(event.ts as string).length, 1, 'answers to five identical deliveries');
    c.equal(await count(h, 'triggers'), before + 1, 'triggers stored for five identical deliveries');
    c.equal(await count(h, 'turns'), 1, 'turns run for five identical deliveries');
  } catch (error) {
    c.check(false, (error as Error).message.split('\n').slice(0, 3).join(' '));
  } finally {
    await h.stop();
  }
  return {
    fault: 'Slack requests unsigned, wrongly signed, stale, replayed',
    tried: 'fast-check over unsigned / wrong secret / stale 5 min-1 day / tampered body / garbage signature / bad timestamp; 5 identical replays of one signed event',
    times: sent,
    held: `forged: always 401 (${[...statuses].map(([s, n]) => `${s}:${n}`).join(' ')}), 0 stored; replays: 1 trigger, 1 turn, 1 answer`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}

type JsonPath = Array<string | number>;

/** Every path to a value inside `value` (not the root), depth first. */
function jsonPaths(value: unknown, prefix: JsonPath = []): JsonPath[] {
  if (value === null || typeof value !== 'object') return [];
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return entries.flatMap(([key, inner]) => [[...prefix, key], ...jsonPaths(inner, [...prefix, key])]);
}

const kindOf = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
const WRONG_TYPES: unknown[] = [42, 'text', true, [], {}, [1, 2]];

/** `body` with the value at `path` removed, made null, or replaced by one of another type (the `pick`-th such). */
function mutate(body: unknown, path: JsonPath, op: 'missing' | 'null' | 'wrongType', pick: number): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (op === 'missing') {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else if (op === 'null') {
    parent[last] = null;
  } else {
    const others = WRONG_TYPES.filter((v) => kindOf(v) !== kindOf(parent[last]));
    parent[last] = structuredClone(others[pick % others.length]);
  }
  return copy;
}

interface PayloadKind {
  name: string;
  form: boolean;
  build(): Record<string, unknown>;
  /** Paths whose absence, null or wrong type makes the payload malformed. */
  required: JsonPath[];
  /** No listener takes it (the bot opens no modal): Bolt answers a well-formed one 404 after 3 s, so only its needed fields are broken. */
  unhandled?: true;
}

const PAYLOAD_KINDS: PayloadKind[] = [
  {
    name: 'mention',
    form: false,
    build: () => eventEnvelope(appMention({ user: OWNER, text: '<@UBOT> fuzz', channel: CHANNEL, team: TEAM }), { teamId: TEAM }),
    required: [['type'], ['team_id'], ['event_id'], ['event'], ['event', 'type'], ['event', 'channel'], ['event', 'ts'], ['event', 'text'], ['authorizations', 0]],
  },
  {
    name: 'reply',
    form: false,
    build: () => eventEnvelope(threadMessage({ user: OWNER, text: 'fuzz', channel: CHANNEL, team: TEAM, threadTs: slackTs() }), { teamId: TEAM }),
    required: [['event'], ['event', 'channel'], ['event', 'ts']],
  },
  {
    name: 'home',
    form: false,
    build: () => eventEnvelope(appHomeOpened({ user: OWNER }), { teamId: TEAM }),
    required: [['event'], ['event', 'user']],
  },
  {
    name: 'button',
    form: true,
    build: () => blockActionPayload({ user: OWNER, teamId: TEAM, channel: CHANNEL, actionId: ACTION_IDS.nextStep, value: 'fuzz', threadTs: slackTs() }),
    required: [['type'], ['user'], ['user', 'id'], ['actions'], ['actions', 0], ['actions', 0, 'action_id'], ['actions', 0, 'type']],
  },
  {
    name: 'feedback',
    form: true,
    build: () => blockActionPayload({ user: OWNER, teamId: TEAM, channel: CHANNEL, actionId: ACTION_IDS.verdictFeedback, value: 'positive', elementType: 'feedback_buttons' }),
    required: [['user'], ['actions'], ['actions', 0]],
  },
  {
    name: 'view',
    form: true,
    unhandled: true,
    build: () => ({
      type: 'view_submission',
      team: { id: TEAM, domain: 'fake' },
      user: { id: OWNER, team_id: TEAM },
      api_app_id: 'A0FAKEAPP',
      trigger_id: '1.2.3',
      view: { id: 'V0FUZZ', type: 'modal', callback_id: 'fuzz', state: { values: {} }, blocks: [] },
    }),
    required: [['user'], ['user', 'id'], ['view'], ['view', 'id'], ['view', 'callback_id']],
  },
];

async function storedSlackRows(h: Harness): Promise<string> {
  const row = await sql<{ n: string }>`
    select (select count(*) from chats) || '/' || (select count(*) from triggers) || '/' || (select count(*) from button_choices) || '/' || (select count(*) from verdict_feedback) as n`.execute(h.db.db);
  return row.rows[0]!.n;
}

/**
 * Validly signed Slack payloads (mentions, replies, Home opens, buttons, feedback, views) with one
 * field missing, null or of another type: a 400 with one warning line and nothing stored when the
 * field is one the payload needs, else taken (200); never a 5xx.
 */
export async function malformedSlack(o: { runs: number; newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await startHarness({ script: () => ({ content: [text('Hello.')] }), ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  const url = () => `${h.url()}/slack/events`;
  const secret = h.env.SLACK_SIGNING_SECRET!;
  const warnings = async () => (await h.logs()).split('\n').filter((line) => line.includes('"malformed Slack request refused"')).length;
  const statuses = new Map<number, number>();
  let sent = 0;
  let refused = 0;
  try {
    const warningsBefore = await warnings();
    const op = fc.constantFrom('missing' as const, 'null' as const, 'wrongType' as const);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PAYLOAD_KINDS.map((k) => k.name)), fc.boolean(), fc.nat(), op, fc.nat(), async (name, onRequired, index, operation, pick) => {
        const kind = PAYLOAD_KINDS.find((k) => k.name === name)!;
        const body = kind.build();
        const needed = onRequired || kind.unhandled === true;
        const paths = needed ? kind.required : jsonPaths(body);
        const path = paths[index % paths.length]!;
        const mutated = mutate(body, path, operation, pick);
        const raw = kind.form ? `payload=${encodeURIComponent(JSON.stringify(mutated))}` : JSON.stringify(mutated);
        const before = await storedSlackRows(h);
        const res = await postToBolt(url(), secret, raw, kind.form ? 'application/x-www-form-urlencoded' : 'application/json');
        sent += 1;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const what = `${kind.name} with ${path.join('.')} ${operation}`;
        if (needed && res.status !== 400) throw new Error(`${what} answered ${res.status}, not 400`);
        if (res.status !== 200 && res.status !== 400) throw new Error(`${what} answered ${res.status}`);
        if (res.status === 400) {
          refused += 1;
          const after = await storedSlackRows(h);
          if (after !== before) throw new Error(`${what} was refused but stored rows (chats/triggers/choices/feedback ${before} -> ${after})`);
        }
      }),
      { numRuns: o.runs, seed: 41 },
    );
    c.check(refused > 0, 'some malformed payloads were refused');
    c.equal((await warnings()) - warningsBefore, refused, 'warning lines for refused requests');
    c.equal((await fetch(`${h.url()}/healthz`)).status, 200, 'health after the fuzzing');
  } catch (error) {
    c.check(false, (error as Error).message.split('\n').slice(0, 3).join(' '));
  } finally {
    await h.stop();
  }
  return {
    fault: 'Signed Slack payloads with a field missing, null or of the wrong type',
    tried: 'fast-check over mentions, thread replies, Home opens, buttons, feedback and view submissions, one field (any, or one the payload needs) removed, nulled or retyped',
    times: sent,
    held: `never a 5xx (${[...statuses].map(([s, n]) => `${s}:${n}`).join(' ')}); every needed field broken: 400; ${refused} refused with one warning each and nothing stored`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** Benchmark 666 carries instructions in its questions and answers: they never reach the model; an obedient model is refused. */
export async function promptInjection(o: { newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await startHarness({ script: loopScript(), ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  let leaked = 0;
  let checked = 0;
  try {
    const m = await h.mention({ user: OWNER, text: SEED_MESSAGE.replaceAll('104', '666') });
    await waitForVerdict(h, m.ts, 90_000);
    await sleep(1000);
    checkLoopThread(c, h, m.ts, 'loop on 666');
    const bot = h.bot()!;
    const requests = h.model.requests.map((r) => JSON.stringify(r.body)).join('\n');
    const runs = await h.db.db.selectFrom('resources').select('platform_id').where('kind', '=', 'run').execute();
    for (const run of runs) {
      let cursor: string | undefined;
      do {
        const page = await bot.platform.listRunResults(run.platform_id, { limit: 100, ...(cursor ? { cursor } : {}) });
        for (const item of page.items) {
          for (const field of [item.question, item.modelAnswer, item.expectedAnswer]) {
            if (field.length < 12) continue;
            checked += 1;
            if (requests.includes(JSON.stringify(field).slice(1, -1))) leaked += 1;
          }
        }
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
    }
    c.check(checked > 0, 'question texts were checked');
    c.equal(leaked, 0, 'question/answer texts that reached the model');

    const runsBefore = (await sandboxCounts(h.db.db)).runs;
    h.model.setScript(loopScript({ rogueLaunch: { benchmarkId: '666', modelId: 'qwen/Qwen2.5-7B-Instruct' } }));
    const rogue = await h.mention({ user: OWNER, text: '<@UBOT> Run benchmark 666 on Qwen2.5-0.5B-Instruct' });
    await h.waitForPosts(rogue.ts, 2, 60_000);
    await sleep(1500);
    c.equal((await sandboxCounts(h.db.db)).runs, runsBefore + 1, 'runs after an obedient model tried an unplanned launch');
    c.check(h.model.requests.some((r) => JSON.stringify(r.body.messages).includes('Refused by the spend guard')), 'the guard refused the launch');
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await h.stop();
  }
  return {
    fault: 'Prompt injection in benchmark data',
    tried: 'full loop on benchmark 666 (instructions in questions and answers); then a model that obeys and launches from an event-woken turn',
    times: checked,
    held: `${leaked} of ${checked} question/answer texts reached the model; the unplanned launch was refused, nothing launched`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** Peak heap and RSS of this process, sampled every 250 ms while running. */
function memorySampler(): { stop(): { heapMb: number; rssMb: number } } {
  let heap = process.memoryUsage().heapUsed;
  let rss = process.memoryUsage.rss();
  const timer = setInterval(() => {
    heap = Math.max(heap, process.memoryUsage().heapUsed);
    rss = Math.max(rss, process.memoryUsage.rss());
  }, 250);
  return {
    stop() {
      clearInterval(timer);
      return { heapMb: Math.round(heap / 1e6), rssMb: Math.round(rss / 1e6) };
    },
  };
}

const mb = (bytes: number) => Math.round(bytes / 1e6);

/**
 * A 40,000-character message answered in full; loops on the 2,500-question benchmark 305; then
 * (when `bigLoops` > 0) loops on the 100,000-question benchmark 410, whose base run fails over
 * 10,000 questions: within Slack's limits, memory bounded, small model requests.
 */
export async function oversized(o: { newDatabase?: NewDatabase; benchmarkLoops?: number; bigLoops?: number }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const loop = loopScript();
  const script: Script = (req, ctx) => {
    const last = allText({ ...req, system: [], messages: [req.messages.at(-1)!] });
    if (last.length > 30_000 && req.messages.length === 1) return { content: [text(`You wrote: ${last}`)] };
    return loop(req, ctx);
  };
  const h = await startHarness({
    script,
    env: { SANDBOX_TIME_SCALE: '0.002', SPEND_CONFIRM_THRESHOLD: '100000', CHAT_BUDGET: '100000', SPEND_CAP_PERSON: '100000', SPEND_CAP_WORKSPACE: '100000' },
    botOptions: { sandbox: { startingBalance: 100_000 } },
    ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  const loops = o.benchmarkLoops ?? 1;
  const bigLoops = o.bigLoops ?? 0;
  let heapMb = 0;
  let largest = 0;
  const big = { ms: 0, heapMb: 0, peakHeapMb: 0, peakRssMb: 0, largest: 0, failed: 0, trained: 0, examples: 0, tokens: 0, credits: 0 };
  try {
    const long = `<@UBOT> ${'lorem ipsum dolor sit amet '.repeat(1500)}`.slice(0, 40_000);
    const bigMessage = await h.mention({ user: OWNER, text: long });
    c.equal(bigMessage.status, 200, 'a 40,000-character message accepted');
    const [answer] = await h.waitForPosts(bigMessage.ts, 1, 30_000);
    c.check((answer?.text.length ?? 0) > 0 && (answer?.text.length ?? 0) <= 40_000, 'the answer fits Slack\'s 40,000 characters');
    const heapBefore = process.memoryUsage().heapUsed;
    for (let i = 0; i < loops; i += 1) {
      const m = await h.mention({ user: OWNER, text: SEED_MESSAGE.replaceAll('104', '305') });
      await waitForVerdict(h, m.ts, 120_000);
      await sleep(500);
      checkLoopThread(c, h, m.ts, `loop on 305 #${i + 1}`);
    }
    heapMb = mb(process.memoryUsage().heapUsed - heapBefore);
    const datasets = await h.db.db.selectFrom('resources').select('details').where('kind', '=', 'dataset').execute();
    c.check(datasets.length === loops, 'datasets built');
    c.check(heapMb < 300, `heap growth ${heapMb} MB`);

    for (let i = 0; i < bigLoops; i += 1) {
      const loopStarted = Date.now();
      const requestsBefore = h.model.requests.length;
      const heapBeforeBig = process.memoryUsage().heapUsed;
      const memory = memorySampler();
      const m = await h.mention({ user: OWNER, text: SEED_MESSAGE.replaceAll('104', '410') });
      await waitForVerdict(h, m.ts, 300_000);
      await sleep(500);
      const peak = memory.stop();
      big.ms = Date.now() - loopStarted;
      big.heapMb = mb(process.memoryUsage().heapUsed - heapBeforeBig);
      big.peakHeapMb = Math.max(big.peakHeapMb, peak.heapMb);
      big.peakRssMb = Math.max(big.peakRssMb, peak.rssMb);
      big.largest = Math.max(big.largest, ...h.model.requests.slice(requestsBefore).map((r) => r.bytes));
      checkLoopThread(c, h, m.ts, `loop on 410 #${i + 1}`);
      const verdict = h.posts(m.ts).at(-1);
      c.check(/100,000|100000/.test(JSON.stringify(verdict?.blocks ?? [])), `loop on 410 #${i + 1}: the verdict counts 100,000 questions`);
    }
    if (bigLoops > 0) {
      const row = await sql<{ failed: number; trained: number; examples: number; tokens: string }>`
        select failed_question_count as failed, cardinality(trained_question_ids) as trained,
               example_count as examples, token_count as tokens
          from sandbox.datasets where benchmark_id = '410' order by id desc limit 1`.execute(h.db.db);
      const d = row.rows[0];
      big.failed = d?.failed ?? 0;
      big.trained = d?.trained ?? 0;
      big.examples = d?.examples ?? 0;
      big.tokens = Number(d?.tokens ?? 0);
      const spent = await sql<{ credits: string }>`
        select coalesce(sum(charged), 0) as credits from (
          select charged from sandbox.runs where benchmark_id = '410'
          union all
          select t.charged from sandbox.trainings t join sandbox.datasets d on d.id = t.dataset_id where d.benchmark_id = '410') x`.execute(h.db.db);
      big.credits = Number(spent.rows[0]?.credits ?? 0) / bigLoops;
      c.check(big.failed >= 10_000, `failed questions of the 100,000-question baseline: ${big.failed}`);
      c.check(big.trained === big.failed, `trained-on questions ${big.trained} of ${big.failed} failed`);
      c.check(big.peakHeapMb < 1_000, `peak heap ${big.peakHeapMb} MB during the 100,000-question loop`);
      c.check(big.largest < 200_000, `largest model request of the 100,000-question loop ${big.largest} bytes`);
    }
    c.equal(h.slack.violations, [], 'Slack violations (text, blocks, table limits)');
    largest = Math.max(...h.model.requests.map((r) => r.bytes));
    c.check(largest < 200_000, `largest model request ${largest} bytes`);
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await h.stop();
  }
  const bigTried = bigLoops > 0 ? `; ${bigLoops} full loop(s) on benchmark 410 (100,000 questions)` : '';
  const bigHeld =
    bigLoops > 0
      ? `; 100k loop: ${big.failed} failed, dataset ${big.trained} questions / ${big.examples} examples / ${big.tokens} tokens, ` +
        `${big.credits} credits, heap +${big.heapMb} MB (peak ${big.peakHeapMb} MB, RSS peak ${big.peakRssMb} MB), ` +
        `largest model request ${big.largest} B, ${(big.ms / 1000).toFixed(1)} s`
      : '';
  return {
    fault: 'Oversized inputs',
    tried: `a 40,000-character mention echoed back; ${loops} full loop(s) on benchmark 305 (2,500 questions, ~1,400 failed)${bigTried}`,
    times: 1 + loops + bigLoops,
    held: `answered within Slack's limits (${h.slack.violations.length} violations), no crash; heap growth ${heapMb} MB; largest model request ${largest} B${bigHeld}`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}
