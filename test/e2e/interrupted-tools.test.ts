// The bot killed after a tool launched something but before the tool's result was stored: the
// resumed turn runs the same tool calls again, and must report the launch it made, not launch twice
// nor be refused ("a plan is already running", "not the next step") for a step it started itself.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { within } from '../kit/wait.js';
import { startSandbox, type SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { createTestDatabase } from '../kit/database.js';
import { type Harness, isVerdict, sandboxCounts, startHarness, waitForVerdict } from '../kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';

const OWNER = 'UOWNER';

/**
 * A pass-through proxy in front of the platform API that, once armed with a launch path, holds
 * the platform's answer to that launch or the first balance read after it, so a test can kill the
 * bot at that exact moment.
 */
async function startHoldingProxy(target: string) {
  let armedFor: string | null = null;
  let holdAnswer = false;
  let launched = false;
  let onHeld: (() => void) | null = null;
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (armedFor && launched && req.method === 'GET' && path.endsWith('/account')) {
        armedFor = null;
        held.push(res);
        onHeld?.();
        return;
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k))) as Record<string, string>;
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(target + req.url, { method: req.method, headers, ...(body && req.method !== 'GET' ? { body } : {}) })
        .then(async (answer) => {
          const text = Buffer.from(await answer.arrayBuffer());
          if (armedFor && req.method === 'POST' && path.endsWith(armedFor) && answer.ok) {
            launched = true;
            if (holdAnswer) {
              // The platform has the launch; its answer is lost with the process.
              armedFor = null;
              held.push(res);
              onHeld?.();
              return;
            }
          }
          res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([k]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k))));
          res.end(text);
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /**
     * Resolves when, after the platform accepted a POST to `launchPath`, either its answer
     * (`'answer'`: the launch happened, the bot never hears of it) or the next balance read
     * (`'balance-read'`: the launch is recorded, the tool's result not yet) is being held.
     */
    hold(launchPath: string, what: 'answer' | 'balance-read'): Promise<void> {
      armedFor = launchPath;
      holdAnswer = what === 'answer';
      launched = false;
      return new Promise<void>((resolve) => {
        onHeld = resolve;
      });
    },
    stop: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let h: Harness | undefined;
let sandbox: SandboxHandle | undefined;
let proxy: Awaited<ReturnType<typeof startHoldingProxy>> | undefined;
afterEach(async () => {
  await h?.stop();
  await proxy?.stop();
  await sandbox?.stop();
  h = sandbox = proxy = undefined;
});

async function startBotOnProxy(databaseUrl: string, env: Record<string, string> = {}): Promise<Harness> {
  const harness = await startHarness({
    script: loopScript(),
    mode: 'process',
    databaseUrl,
    env: {
      BENCHGEN_API_URL: proxy!.url,
      BENCHGEN_API_TOKEN: sandbox!.token,
      BENCHGEN_WEBHOOK_SECRET: sandbox!.webhookSecret,
      RECONCILE_OVERDUE_SECONDS: '2',
      RECONCILE_CRON: '* * * * * *',
      ...env,
    },
  });
  await sandbox!.setWebhookUrl(`${harness.url()}/webhooks/platform`);
  return harness;
}

async function restartBot(harness: Harness): Promise<void> {
  await harness.kill();
  await harness.restart();
  await sandbox!.setWebhookUrl(`${harness.url()}/webhooks/platform`);
}

describe('a turn interrupted between a launch and its stored result', () => {
  it('repeats a launch whose answer was lost with the same key, even when the balance it used is gone', async () => {
    const databaseUrl = await createTestDatabase('interrupted_answer');
    // Room for one run (4 credits): judged again after the launch, it would be refused for credits.
    sandbox = await startSandbox({ databaseUrl, timeScale: 0.01, token: `sbx_answer_${Date.now()}`, startingBalance: 6 });
    proxy = await startHoldingProxy(sandbox.url);
    h = await startBotOnProxy(databaseUrl);

    const holding = proxy.hold('/runs', 'answer');
    const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    await within(60_000, holding, 'the run launch');
    await restartBot(h);

    const [first] = await h.waitForPosts(m.ts, 1, 60_000);
    expect(first!.text).toMatch(/Launched run \S+ of benchmark 104/);
    expect(first!.text).not.toMatch(/Not launched|Refused|already running/);
    expect((await sandboxCounts(h.db.db)).runs).toBe(1);
    const recorded = await h.db.db.selectFrom('resources').select(['platform_id', 'plan_step']).where('kind', '=', 'run').execute();
    expect(recorded).toEqual([{ platform_id: expect.stringMatching(/^run_/), plan_step: 'baseline_run' }]);
    // The run's finish woke the plan (the launch is known to the bot, not orphaned on the platform):
    // the training set was built from it, and the training, for which no credits are left, waits
    // for an approval instead of launching.
    const [, next] = await h.waitForPosts(m.ts, 2, 60_000);
    expect(next!.text).toMatch(/Not launched: it costs [\d.]+ credits and only [\d.]+ are available/);
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 1, trainings: 0, datasets: 1 });
    expect(h.crashes).toEqual([]);
  }, 120_000);

  it('reports the launches it made when resumed: no second launch, no refusal, the thread reads in order', async () => {
    const databaseUrl = await createTestDatabase('interrupted_tools');
    sandbox = await startSandbox({ databaseUrl, timeScale: 0.01, token: `sbx_interrupted_${Date.now()}` });
    proxy = await startHoldingProxy(sandbox.url);
    // Room for the loop's launches once each (4 + 4.11 + 4 credits), not for the training twice:
    // a resumed launch must not count its own earlier launch against the thread's budget.
    h = await startBotOnProxy(databaseUrl, { CHAT_BUDGET: '12.15' });

    // 1. The person's turn: plan-set and benchmark-launch in one assistant message; killed after the launch.
    let holding = proxy.hold('/runs', 'balance-read');
    const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
    await within(60_000, holding, 'the run launch');
    await restartBot(h);

    // 2. The event-woken turn that launches the training; killed after the launch.
    holding = proxy.hold('/trainings', 'balance-read');
    await h.waitForPosts(m.ts, 1, 60_000);
    await within(60_000, holding, 'the training launch');
    await restartBot(h);

    await waitForVerdict(h, m.ts, 90_000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });
    const posts = h.posts(m.ts);
    expect(posts.map((p) => p.text.slice(0, 60))).toHaveLength(4);
    expect(posts[0]!.text).toMatch(/Launched run \S+ of benchmark 104/);
    expect(posts[0]!.text).not.toMatch(/already running|Refused/);
    expect(posts[1]!.text).toMatch(/Launched LoRA training/);
    expect(posts[1]!.text).not.toMatch(/Refused/);
    expect(posts[2]!.text).toMatch(/Launched run/);
    expect(isVerdict(posts[3]!)).toBe(true);
    expect(h.crashes).toEqual([]);
  }, 180_000);
});
