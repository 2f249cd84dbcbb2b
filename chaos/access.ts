// Access scenarios: tenant isolation between workspaces, who may spend, secrets never written out, linked logs.
import { sql } from 'kysely';
import { ACTION_IDS } from '../src/slack/action-ids.js';
import { toolUse, type Script } from '../test/kit/fakes/anthropic/index.js';
import { appHomeOpened, postToBolt, sendBlockAction, sendEvent, userMessage } from '../test/kit/fakes/slack/index.js';
import { CHANNEL, type Harness, sandboxCounts, startHarness, TEAM, waitForVerdict } from '../test/kit/harness.js';
import { waitUntil } from '../test/kit/wait.js';
import { loopScript, SEED_MESSAGE } from '../test/kit/loop-script.js';
import { OWNER } from './faults.js';
import { Checks, type Figure } from './figure.js';
import { checkLoopThread } from './loop-checks.js';
import { sleep } from '../test/kit/wait.js';
import { type NewDatabase } from '../test/kit/database.js';

const OTHER_TEAM = 'T0OTHER';
const OTHER_CHANNEL = 'C0OTHER';

/** The loop script, plus "READ run <id>" / "COMPARE <a> <b>" prompts that make the model read a resource by id. */
function readingScript(): Script {
  const loop = loopScript();
  return (req, ctx) => {
    const last = JSON.stringify(req.messages.at(-1)?.content ?? '');
    const read = /READ run (\S+?)[\s"\\]/.exec(last);
    if (read && req.messages.at(-1)?.role === 'user' && !last.includes('tool_result')) return { content: [toolUse('run-status', { runId: read[1] })] };
    const compare = /COMPARE (\S+) (\S+?)[\s"\\]/.exec(last);
    if (compare && !last.includes('tool_result')) return { content: [toolUse('benchmark-analyze', { beforeRunId: compare[1], afterRunId: compare[2] })] };
    return loop(req, ctx);
  };
}

/** Home tab publishes still queued (after a turn, a refresh waits up to 2 s to coalesce). */
async function pendingHomePublishes(h: Harness): Promise<number | undefined> {
  const row = await sql<{ n: string }>`
    select count(*) as n from graphile_worker.jobs where task_identifier = 'publish_home'`.execute(h.db.db);
  const n = Number(row.rows[0]!.n);
  return n === 0 ? n : undefined;
}

async function triggerCount(h: Harness): Promise<number> {
  return Number((await sql<{ n: string }>`select count(*) as n from triggers`.execute(h.db.db)).rows[0]!.n);
}

/** Two workspaces with a loop each: threads, Home tab, buttons, replies and tool reads show nothing of the other. */
export async function tenantIsolation(o: { newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await startHarness({ script: readingScript(), env: { ADMIN_USER_IDS: 'UADMIN' }, ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  let probes = 0;
  try {
    const a = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    const b = await h.mention({ user: OWNER, text: SEED_MESSAGE, team: OTHER_TEAM, channel: OTHER_CHANNEL });
    await waitForVerdict(h, a.ts, 90_000);
    await waitForVerdict(h, b.ts, 90_000, OTHER_CHANNEL);
    await sleep(1000);
    checkLoopThread(c, h, a.ts, 'team A');
    checkLoopThread(c, h, b.ts, 'team B', OTHER_CHANNEL);
    const runsOf = async (team: string) =>
      (await h.db.db.selectFrom('resources').select('platform_id').where('team_id', '=', team).where('kind', '=', 'run').orderBy('id').execute()).map((r) => r.platform_id);
    const runsA = await runsOf(TEAM);
    const runsB = await runsOf(OTHER_TEAM);
    c.equal([runsA.length, runsB.length], [2, 2], 'runs per team');
    const threadText = (ts: string, channel?: string) => JSON.stringify(h.posts(ts, channel));
    for (const id of runsB) c.check(!threadText(a.ts).includes(id), `team A's thread mentions B's ${id}`);
    for (const id of runsA) c.check(!threadText(b.ts, OTHER_CHANNEL).includes(id), `team B's thread mentions A's ${id}`);
    probes += 2;

    for (const [team, user, others] of [[TEAM, OWNER, runsB], [OTHER_TEAM, OWNER, runsA]] as const) {
      // Both workspaces' owners have the same user id here, and the fake Slack cannot tell their Home
      // tabs apart: let the loops' own refreshes land first, so the publishes below are this probe's.
      await waitUntil(() => pendingHomePublishes(h), 20_000, 'queued Home refreshes to finish');
      await sleep(300);
      const before = h.slack.callsTo('views.publish').length;
      await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
        user,
        teamId: team,
        actionId: ACTION_IDS.homeScope,
        value: 'team',
        view: { id: `VHOME${team}`, type: 'home' },
      });
      await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, appHomeOpened({ user }), { teamId: team });
      await waitUntil(() => (h.slack.callsTo('views.publish').length >= before + 1 ? true : undefined), 20_000, 'a Home tab publish');
      await sleep(800);
      const views = h.slack.callsTo('views.publish').slice(before).map((call) => JSON.stringify(call.args));
      for (const view of views) for (const id of others) c.check(!view.includes(id), `Home tab of ${team} shows ${id}`);
      probes += views.length;
    }

    const triggersBefore = await triggerCount(h);
    const runsBefore = (await sandboxCounts(h.db.db)).runs;
    const grant = JSON.stringify({ kind: 'approve', intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'qwen/Qwen2.5-7B-Instruct' }, credits: 10 });
    for (const actionId of [ACTION_IDS.approve, ACTION_IDS.retry, ACTION_IDS.nextStep]) {
      const res = await sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
        user: OWNER,
        teamId: OTHER_TEAM,
        channel: CHANNEL,
        messageTs: h.posts(a.ts)[0]!.ts,
        threadTs: a.ts,
        actionId,
        value: actionId === ACTION_IDS.approve ? grant : JSON.stringify({ kind: 'retry', trigger: '1' }),
      });
      c.check(res.status < 500, `cross-team button ${actionId} answered ${res.status}`);
      probes += 1;
    }
    const reply = userMessage({ user: OWNER, text: 'launch benchmark 104 on Qwen2.5-7B-Instruct', channel: CHANNEL, threadTs: a.ts, team: OTHER_TEAM });
    await sendEvent(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, reply, { teamId: OTHER_TEAM });
    probes += 1;
    await sleep(1500);
    c.equal(await triggerCount(h), triggersBefore, 'triggers stored from team B clicks and replies on team A\'s thread');
    c.equal((await sandboxCounts(h.db.db)).runs, runsBefore, 'runs launched from the other team');

    await h.reply({ user: OWNER, text: `READ run ${runsA[0]} please`, threadTs: b.ts, channel: OTHER_CHANNEL, team: OTHER_TEAM });
    await h.waitForPosts(b.ts, 5, 30_000, OTHER_CHANNEL);
    await h.reply({ user: OWNER, text: `COMPARE ${runsA[0]} ${runsA[1]} please`, threadTs: b.ts, channel: OTHER_CHANNEL, team: OTHER_TEAM });
    await h.waitForPosts(b.ts, 6, 30_000, OTHER_CHANNEL);
    probes += 2;
    const answers = h.posts(b.ts, OTHER_CHANNEL).slice(4);
    const modelSaw = h.model.requests.slice(-4).map((r) => JSON.stringify(r.body.messages.at(-1))).join('\n');
    for (const id of runsA) c.check(!modelSaw.includes(`Run ${id} (benchmark`), `a tool showed team B the details of A's ${id}`);
    c.check(!answers.some((p) => /score [\d.]+%/.test(p.text) || JSON.stringify(p.blocks ?? []).includes('"type":"table"')), 'team B got figures of A\'s runs');
  } catch (error) {
    c.check(false, (error as Error).message);
    if (process.env.CHAOS_DEBUG) console.log(JSON.stringify(h.model.requests.slice(-3).map((r) => [r.status, r.body.messages.at(-1), r.response]), null, 1).slice(0, 6000));
  } finally {
    await h.stop();
  }
  return {
    fault: 'Tenant isolation (two workspaces)',
    tried: 'a loop per workspace (same user id in both); Home tab per team; team-B approve/retry/next buttons and a reply on A\'s thread; team B asking the agent to read and compare A\'s runs by id',
    times: probes,
    held: 'nothing of one workspace shown to the other; 0 triggers and 0 launches from cross-team input',
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** Only the owner or an admin may press spend buttons or approve. */
export async function spendPermissions(o: { newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await startHarness({ script: loopScript(), env: { SPEND_CONFIRM_THRESHOLD: '3', ADMIN_USER_IDS: 'UADMIN' }, ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  let clicks = 0;
  try {
    const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    const [first] = await h.waitForPosts(m.ts, 1, 60_000);
    const button = (first!.blocks as Array<{ elements?: Array<{ action_id: string; value: string }> }>)
      .flatMap((b) => b.elements ?? [])
      .find((e) => e.action_id === ACTION_IDS.approve);
    c.check(button !== undefined, 'an approve button above the threshold');
    const click = (user: string) =>
      sendBlockAction(`${h.url()}/slack/events`, h.env.SLACK_SIGNING_SECRET!, {
        user,
        teamId: TEAM,
        channel: CHANNEL,
        messageTs: first!.ts,
        threadTs: m.ts,
        actionId: ACTION_IDS.approve,
        value: button!.value,
      });
    for (const stranger of ['USTRANGER', 'UINTERN', 'UOTHER']) {
      await click(stranger);
      clicks += 1;
    }
    await waitUntil(() => (h.slack.ephemerals.length >= 3 ? true : undefined), 20_000, 'three refusals');
    await h.reply({ user: 'USTRANGER', text: 'launch benchmark 104 on Qwen2.5-0.5B-Instruct', threadTs: m.ts });
    clicks += 1;
    await sleep(1500);
    c.equal((await sandboxCounts(h.db.db)).runs, 0, 'runs after strangers clicked and asked');
    await click('UADMIN');
    clicks += 1;
    await waitUntil(async () => ((await sandboxCounts(h.db.db)).runs === 1 ? true : undefined), 30_000, 'the admin-approved run');
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await h.stop();
  }
  return {
    fault: 'Who may spend',
    tried: 'three non-owners press Approve, one asks for a launch in the thread; then a configured admin presses it',
    times: clicks,
    held: '0 launches from non-owners (each told so privately); the admin\'s click launched exactly one run',
    ms: Date.now() - started,
    failures: c.failures,
  };
}

/** A loop with errors on every side, with the real entry point: no configured secret appears anywhere it writes. */
export async function secretsAndLogs(o: { newDatabase?: NewDatabase }): Promise<Figure> {
  const started = Date.now();
  const c = new Checks();
  const h = await startHarness({ script: loopScript(), mode: 'process', env: { LOG_LEVEL: 'debug' }, ...(o.newDatabase ? { databaseUrl: await o.newDatabase() } : {}) });
  let scanned = 0;
  let linked = 0;
  try {
    h.model.failNext(1, { status: 401, type: 'authentication_error', message: `invalid x-api-key ${h.env.ANTHROPIC_API_KEY!.slice(0, 4)}` });
    const fail = await h.mention({ user: OWNER, text: '<@UBOT> hello' });
    await h.waitForPosts(fail.ts, 1, 30_000);
    h.slack.failNext('chat.postMessage', 1, { status: 500 });
    h.slack.failNext('conversations.replies', 1, { status: 500 });
    const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    const bad = await postToBolt(`${h.url()}/slack/events`, 'wrong', '{"type":"event_callback"}', 'application/json');
    const hook = await fetch(`${h.url()}/webhooks/platform`, { method: 'POST', body: '{}', headers: { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,abc' } });
    const responses = `${bad.body}\n${await hook.text()}`;
    await waitForVerdict(h, m.ts, 90_000);
    await sleep(1000);
    const settings = await sql<{ key: string; value: string }>`select key, value from sandbox.settings where key in ('api_token', 'webhook_secret')`.execute(h.db.db);
    const secrets: Record<string, string> = {
      SLACK_BOT_TOKEN: h.env.SLACK_BOT_TOKEN!,
      SLACK_SIGNING_SECRET: h.env.SLACK_SIGNING_SECRET!,
      ANTHROPIC_API_KEY: h.env.ANTHROPIC_API_KEY!,
      ...Object.fromEntries(settings.rows.map((r) => [r.key === 'api_token' ? 'platform token' : 'webhook secret', r.value])),
    };
    const logs = await h.logs();
    const outputs: Record<string, string> = {
      logs,
      'Slack calls': JSON.stringify(h.slack.calls.map((call) => ({ ...call.args, token: undefined }))),
      'Slack messages': JSON.stringify(h.slack.messages()),
      'model requests': JSON.stringify(h.model.requests.map((r) => r.body)),
      'HTTP answers': responses,
    };
    for (const [where, output] of Object.entries(outputs)) {
      scanned += output.length;
      for (const [name, value] of Object.entries(secrets)) {
        c.check(!output.includes(value), `${name} appears in ${where}`);
        const webhookKey = value.startsWith('whsec_') ? value.slice(6) : undefined;
        if (webhookKey) c.check(!output.includes(webhookKey), `${name} (key part) appears in ${where}`);
      }
    }
    c.equal(Object.keys(secrets).length, 5, 'secrets checked');

    const lines = logs.split('\n').filter((l) => l.trim());
    const parsed = lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    c.equal(lines.length - parsed.length, 0, 'log lines that are not JSON');
    const chat = await h.db.db.selectFrom('chats').select('id').where('thread_ts', '=', m.ts).executeTakeFirstOrThrow();
    const triggers = await h.db.db.selectFrom('triggers').select(['id', 'kind']).where('chat_id', '=', chat.id).execute();
    for (const t of triggers) {
      const mine = parsed.filter((p) => p.triggerId === t.id);
      const has = (msg: string) => mine.some((p) => p.msg === msg);
      const entry = t.kind === 'mention' ? has('app_mention stored') : has('webhook accepted');
      const platformCall = has('tool ran');
      c.check(entry, `trigger ${t.id} (${t.kind}): its Slack event or webhook is logged with the trigger id`);
      c.check(platformCall, `trigger ${t.id} (${t.kind}): its platform calls are logged with the trigger id`);
      if (entry && platformCall) linked += 1;
    }
  } catch (error) {
    c.check(false, (error as Error).message);
  } finally {
    await h.stop();
  }
  return {
    fault: 'Secrets in output; linked logs',
    tried: 'real entry point, debug logs; a model 401, Slack 500s, forged Slack and webhook requests, then the full loop; scan logs, Slack calls and messages, model requests and HTTP answers',
    times: 5,
    held: `0 occurrences of 5 secrets in ${Math.round(scanned / 1024)} kB; every log line JSON; ${linked} triggers linked event -> turn -> platform call by triggerId`,
    ms: Date.now() - started,
    failures: c.failures,
  };
}

