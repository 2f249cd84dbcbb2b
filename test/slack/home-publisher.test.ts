// The Home publisher against a fake Slack and a real Postgres: the published view, paging, scopes, the CSV in the DM.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { CSV_COLUMNS } from '../../src/slack/blocks/app-home.js';
import { createHomePublisher, type BalanceReading } from '../../src/slack/home.js';
import { createSlackClients } from '../../src/slack/poster.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { startFakeSlack, type FakeSlack } from '../kit/fakes/slack/index.js';
import { seedChat, seedTurn } from '../helpers/activity-seed.js';
import { createTestDatabase } from '../kit/database.js';
import { parseCsv } from '../helpers/csv.js';

const TEAM = 'T0FAKE';
const OTHER_TEAM = 'T0OTHER';
const logger = createLogger({ level: 'silent', secrets: [] });

let handle: DbHandle;
let slack: FakeSlack;

function publisher(getBalance?: () => Promise<BalanceReading>) {
  const clients = createSlackClients('xoxb-test', slack.apiUrl, logger);
  return createHomePublisher({ db: handle.db, clients, logger, ...(getBalance ? { getBalance } : {}), balanceTimeoutMs: 200 });
}

const homeText = (user: string) => JSON.stringify(slack.homeViews.get(user)?.blocks ?? null);


beforeAll(async () => {
  handle = createDb(await createTestDatabase('home'), { max: 4 });
  await migrateToLatest(handle.db);
  slack = await startFakeSlack();

  const db = handle.db;
  const mine = await seedChat(db, { teamId: TEAM, ownerUserId: 'U1', channelId: 'C0LOOP', threadTs: '1733150000.000100' });
  const theirs = await seedChat(db, { teamId: TEAM, ownerUserId: 'U2', channelId: 'C0LOOP' });
  const foreign = await seedChat(db, { teamId: OTHER_TEAM, ownerUserId: 'U1', channelId: 'C0LOOP' });
  const start = Date.now() - 60 * 60_000;
  for (let i = 0; i < 24; i += 1) {
    await seedTurn(db, {
      teamId: TEAM,
      chatId: mine,
      summary: `Mine ${i}, with "quotes" — ünïcode`,
      costUsd: '0.1',
      at: new Date(start + i * 60_000),
      resources: i === 23 ? [{ kind: 'run', priceEstimate: '0.1' }, { kind: 'training', priceEstimate: '0.2', priceCharged: '0.2', status: 'completed' }] : [],
    });
  }
  await seedTurn(db, { teamId: TEAM, chatId: theirs, summary: 'Theirs', at: new Date(start + 30 * 60_000) });
  await seedTurn(db, { teamId: OTHER_TEAM, chatId: foreign, summary: 'Foreign secret', at: new Date(start + 31 * 60_000) });
});
beforeEach(() => slack.reset());
afterAll(async () => {
  await slack.stop();
  await handle.close();
});

describe('createHomePublisher', () => {
  it('publishes the first page of the viewer’s own loops with totals, the balance and a Load older button', async () => {
    await publisher(async () => ({ balanceCredits: 980.5, availableCredits: 970.4 })).publish(TEAM, 'U1', {});
    expect(slack.violations).toEqual([]);
    expect(slack.callsTo('views.publish')).toHaveLength(1);
    const view = slack.homeViews.get('U1')!;
    expect(view.type).toBe('home');
    expect((view.blocks as unknown[]).length).toBeLessThanOrEqual(100);
    const text = homeText('U1');
    expect(text).toContain('Mine 23');
    expect(text).toContain('Mine 4');
    expect(text).not.toContain('Mine 3,');
    expect(text).not.toContain('Theirs');
    expect(text).not.toContain('Foreign secret');
    expect(text).toContain('*Loops in progress*\\n1');
    expect(text).toContain('*Credits this week*\\n0.30 (incl. ~0.10 in flight)');
    expect(text).toContain('*Agent cost this week*\\n$2.40 (24 turns)');
    expect(text).toContain('980.50 credits (970.40 available)');
    expect(text).toContain('"value":"mine:1"');
  });

  it('publishes an older page and the workspace scope, never another workspace', async () => {
    const home = publisher(async () => 12);
    await home.publish(TEAM, 'U1', { scope: 'mine', page: 1 });
    let text = homeText('U1');
    expect(text).toContain('Mine 3,');
    expect(text).toContain('Mine 0,');
    expect(text).not.toContain('Mine 4,');
    expect(text).toContain('Back to newest');
    expect(text).not.toContain('Load older');

    await home.publish(TEAM, 'U1', { scope: 'team' });
    text = homeText('U1');
    expect(text).toContain('Theirs');
    expect(text).toContain('<@U2>');
    expect(text).not.toContain('Foreign secret');
    expect(text).toContain('*Agent cost this week*\\n$2.41 (25 turns)');
    expect(slack.violations).toEqual([]);
  });

  it('still publishes when the balance cannot be read or is slow', async () => {
    await publisher(async () => {
      throw new Error('platform down');
    }).publish(TEAM, 'U1', {});
    expect(homeText('U1')).toContain('*Balance*\\n_unavailable_');
    await publisher(() => new Promise(() => undefined)).publish(TEAM, 'U2', {});
    expect(homeText('U2')).toContain('_unavailable_');
    expect(homeText('U2')).toContain('Theirs');
  });

  it('uploads the CSV of the selected scope to the viewer’s DM, one row per turn', async () => {
    await publisher().publish(TEAM, 'U1', { scope: 'mine', csv: true });
    expect(slack.violations).toEqual([]);
    expect(slack.callsTo('conversations.open')[0]?.args.users).toBe('U1');
    expect(slack.callsTo('views.publish')).toHaveLength(0);
    const files = [...slack.files.values()];
    expect(files).toHaveLength(1);
    const file = files[0]!;
    expect(file).toMatchObject({ completed: true, channelId: 'DU1' });
    expect(file.filename).toMatch(/^activity-mine-\d{4}-\d{2}-\d{2}\.csv$/);
    expect(file.initialComment).toContain('24 turns');
    const rows = parseCsv(file.content.toString('utf8'));
    expect(rows[0]).toEqual([...CSV_COLUMNS]);
    expect(rows).toHaveLength(25);
    expect(rows[1]![2]).toBe('Mine 23, with "quotes" — ünïcode');
    expect(rows[24]![2]).toBe('Mine 0, with "quotes" — ünïcode');
    expect(rows.slice(1).every((r) => r[3] === 'C0LOOP' && r[6] === '0.1000000000')).toBe(true);
    expect(rows[1]![8]).toBe('0.2000');

    slack.reset();
    await publisher().publish(TEAM, 'U1', { scope: 'team', csv: true });
    const teamRows = parseCsv([...slack.files.values()][0]!.content.toString('utf8'));
    expect(teamRows).toHaveLength(26);
    expect(teamRows.some((r) => r[2] === 'Theirs')).toBe(true);
    expect(teamRows.some((r) => r[2] === 'Foreign secret')).toBe(false);
  });

  it('does not retry a failed upload: it tells the user in the DM instead', async () => {
    slack.failNext('files.completeUploadExternal', 1, { status: 200, error: 'internal_error' });
    await expect(publisher().publish(TEAM, 'U1', { csv: true })).resolves.toBeUndefined();
    expect(slack.callsTo('files.completeUploadExternal')).toHaveLength(1);
    const notice = slack.callsTo('chat.postMessage')[0];
    expect(notice?.args.channel).toBe('DU1');
    expect(String(notice?.args.text)).toContain('Download CSV');
  });
});
