// Runs the seed message through the whole loop against the sandbox (fake Slack, scripted model) and
// prints the thread as text: the README's walkthrough is this script's output, not typed by hand.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { startBot } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startEmbeddedPostgres } from '../src/store/embedded-postgres.js';
import { startFakeSlack, type FakeMessage } from '../test/fakes/fake-slack.js';
import { startScriptedAnthropic } from '../test/fakes/scripted-anthropic.js';
import { appMention, sendEvent } from '../test/fakes/slack-requests.js';
import { loopScript, SEED_MESSAGE } from '../test/e2e/loop-script.js';

type Block = {
  type: string;
  text?: { text: string };
  elements?: Array<{ type: string; text?: string | { text: string } }>;
  rows?: Array<Array<{ text: string }>>;
};

function renderTable(rows: Array<Array<{ text: string }>>): string {
  const cells = rows.map((r) => r.map((c) => c.text));
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => '  ' + r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')).join('\n');
}

/** mrkdwn as Slack displays it: the escaped control characters shown as themselves. */
const shown = (mrkdwn: string) => mrkdwn.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** A plain-text rendering of a Block Kit message. */
export function renderMessage(message: FakeMessage): string {
  const blocks = (message.blocks ?? []) as Block[];
  if (blocks.length === 0) return shown(message.text);
  return blocks
    .map((b) => {
      switch (b.type) {
        case 'header':
          return `# ${b.text!.text}`;
        case 'section':
          return shown(b.text!.text);
        case 'context':
          return (b.elements ?? []).map((e) => `  > ${shown(typeof e.text === 'string' ? e.text : (e.text?.text ?? ''))}`).join('\n');
        case 'table':
          return renderTable(b.rows ?? []);
        case 'actions':
          return '  ' + (b.elements ?? []).map((e) => `[ ${typeof e.text === 'string' ? e.text : e.text?.text} ]`).join('  ');
        default:
          return `(${b.type})`;
      }
    })
    .join('\n');
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-transcript-'));
  const { chmod } = await import('node:fs/promises');
  await chmod(dir, 0o755);
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg') });
  const slack = await startFakeSlack();
  const model = await startScriptedAnthropic(loopScript());
  const secret = 'transcript-signing-secret';
  const config = loadConfig({
    SLACK_BOT_TOKEN: 'xoxb-transcript',
    SLACK_SIGNING_SECRET: secret,
    SLACK_API_URL: slack.apiUrl,
    ANTHROPIC_API_KEY: 'transcript-key',
    ANTHROPIC_BASE_URL: model.baseURL,
    DATABASE_URL: pg.url,
    PORT: '0',
    SANDBOX_TIME_SCALE: '0.02',
    LOG_LEVEL: 'silent',
  });
  const bot = await startBot(config, {
    host: '127.0.0.1',
    pollIntervalMs: 500,
    logger: createLogger({ level: 'silent', secrets: [], destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
  });
  const event = appMention({ user: 'U0ALICE', text: SEED_MESSAGE, channel: 'C0ML' });
  slack.seedMessage({ channel: 'C0ML', user: 'U0ALICE', text: SEED_MESSAGE, ts: event.ts as string });
  await sendEvent(`${bot.url}/slack/events`, secret, event, { teamId: 'T0FAKE' });
  const thread = event.ts as string;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const posts = slack.messages('C0ML', thread).filter((m) => !m.seeded);
    if (posts.some((p) => JSON.stringify(p.blocks ?? []).includes('"type":"table"'))) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const lines = [`**@alice:** ${SEED_MESSAGE.replace('<@UBOT>', '@verdict')}`, ''];
  for (const post of slack.messages('C0ML', thread).filter((m) => !m.seeded)) {
    lines.push('**verdict (bot):**', '```', renderMessage(post).replaceAll('<@U0ALICE>', '@alice'), '```', '');
  }
  console.log(lines.join('\n'));
  await bot.stop();
  await slack.stop();
  await model.stop();
  await pg.stop();
  await rm(dir, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
