// The App Home builders by shape: block and text limits whatever the entries hold, buttons, scope, CSV quoting.
import { describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import {
  buildActivityCsv,
  buildHomeView,
  CSV_COLUMNS,
  formatCredits,
  formatUsd,
  HOME_PAGE_SIZE,
  slackDate,
  truncateMrkdwn,
  type HomeViewInput,
} from '../../src/slack/blocks/app-home.js';
import type { ActivityEntry, ActivityTotals } from '../../src/store/activity-queries.js';
import { validateView } from '../kit/fakes/slack/index.js';
import { parseCsv } from '../helpers/csv.js';

type Block = { type: string; text?: { text: string }; fields?: { text: string }[]; elements?: Record<string, unknown>[] };

function entry(overrides: Partial<ActivityEntry> = {}, n = 1): ActivityEntry {
  return {
    id: String(n),
    turnId: String(n),
    chatId: '1',
    createdAt: new Date('2026-12-02T14:03:00Z'),
    ownerUserId: 'U1',
    channelId: 'C0LOOP',
    threadTs: '1733150000.000100',
    triggerKind: 'platform_event',
    triggerLabel: 'run.completed',
    summary: `Baseline scored 61% on benchmark 104 (turn ${n})`,
    postPermalink: 'https://acme.slack.com/archives/C0LOOP/p1733160000000001?thread_ts=1733150000.000100&cid=C0LOOP',
    postTs: '1733160000.000001',
    threadPermalink: 'https://acme.slack.com/archives/C0LOOP/p1733150000000100',
    resources: [
      { kind: 'dataset', platformId: 'ds_1', webUrl: 'https://platform.test/datasets/ds_1', status: 'ready', priceEstimate: null, priceCharged: null },
      { kind: 'training', platformId: 'tr_1', webUrl: 'https://platform.test/trainings/tr_1', status: 'running', priceEstimate: '40.0000', priceCharged: null },
    ],
    agentCostUsd: '0.0123456789',
    creditsEstimated: '40.0000',
    creditsCharged: null,
    creditsInFlight: '40.0000',
    ...overrides,
  };
}

const totals: ActivityTotals = { loopsInProgress: 2, creditsSpent: '52.5000', creditsInFlight: '40.0000', agentCostUsd: '0.4200000000', turns: 7 };

function view(input: Partial<HomeViewInput> = {}) {
  return buildHomeView({ entries: [entry()], totals, scope: 'mine', page: 0, hasMore: false, balance: 1234.5, ...input });
}

const blocksOf = (v: { blocks: unknown[] }) => v.blocks as Block[];
const buttons = (v: { blocks: unknown[] }) =>
  blocksOf(v)
    .filter((b) => b.type === 'actions')
    .flatMap((b) => b.elements ?? []) as { action_id: string; value: string; text: { text: string } }[];
const allText = (v: { blocks: unknown[] }) => JSON.stringify(v.blocks);
const entries = (n: number) => Array.from({ length: n }, (_, i) => entry({}, i + 1));

describe('buildHomeView', () => {
  it.each([0, 1, 99, 1000])('stays within the Home tab limits with %i entries', (n) => {
    const v = view({ entries: entries(n), hasMore: false });
    expect(v.type).toBe('home');
    expect(v.blocks.length).toBeLessThanOrEqual(100);
    expect(validateView(v, 'home')).toEqual([]);
    const shown = blocksOf(v).filter((b) => b.type === 'section' && b.text?.text.includes('run.completed')).length;
    expect(shown).toBe(Math.min(n, HOME_PAGE_SIZE));
    const more = buttons(v).find((b) => b.text.text === 'Load older');
    if (n > HOME_PAGE_SIZE) expect(more).toMatchObject({ action_id: ACTION_IDS.homeMore, value: 'mine:1' });
    else expect(more).toBeUndefined();
  });

  it('says so when there is nothing yet, and when a page is past the end', () => {
    expect(allText(view({ entries: [] }))).toContain('Nothing yet');
    expect(allText(view({ entries: [], scope: 'team' }))).toContain('Nobody in this workspace');
    const past = view({ entries: [], page: 4 });
    expect(allText(past)).toContain('No older entries');
    expect(buttons(past).find((b) => b.text.text === 'Back to newest')).toMatchObject({ action_id: ACTION_IDS.homeScope, value: 'mine' });
  });

  it('shows an entry: time, trigger, linked summary, resources with links, cost and the chat', () => {
    const v = view({ entries: [entry({ creditsCharged: '38.2500', creditsInFlight: '0.0000' })] });
    const section = blocksOf(v).find((b) => b.type === 'section' && b.text?.text.includes('run.completed'))!;
    const text = section.text!.text;
    expect(text).toContain('*run.completed*');
    expect(text).toContain('<!date^1796220180^{date_short_pretty} {time}|2026-12-02 14:03 UTC>');
    expect(text).toContain('Baseline scored 61% on benchmark 104');
    expect(text).toContain('<https://acme.slack.com/archives/C0LOOP/p1733160000000001?thread_ts=1733150000.000100&cid=C0LOOP|view message>');
    expect(text).toContain('<https://platform.test/trainings/tr_1|tr_1>');
    expect(text).toContain('<https://platform.test/datasets/ds_1|ds_1>');
    expect(text).toContain('~40.00 credits est.');
    const context = blocksOf(v)[blocksOf(v).indexOf(section) + 1]!;
    expect(context.type).toBe('context');
    const contextText = JSON.stringify(context.elements);
    expect(contextText).toContain('Agent cost $0.0123');
    expect(contextText).toContain('credits 38.25 charged');
    expect(contextText).toContain('<#C0LOOP>');
    expect(contextText).toContain('<https://acme.slack.com/archives/C0LOOP/p1733150000000100|thread>');
    expect(contextText).not.toContain('<@U1>');
    expect(JSON.stringify(blocksOf(view({ scope: 'team' })))).toContain('<@U1>');
  });

  it('says "free" for items that cost nothing, never "~0.00 credits est."', () => {
    const free = entry({
      resources: [
        { kind: 'dataset', platformId: 'ds_2', webUrl: null, status: 'ready', priceEstimate: '0', priceCharged: null },
        { kind: 'comparison', platformId: 'run_1:run_2', webUrl: null, status: 'completed', priceEstimate: '0.0000', priceCharged: null },
        { kind: 'run', platformId: 'run_3', webUrl: null, status: 'completed', priceEstimate: '4.0000', priceCharged: '0.0000' },
        { kind: 'run', platformId: 'run_4', webUrl: null, status: 'failed', priceEstimate: '4.0000', priceCharged: '0' },
      ],
    });
    const text = blocksOf(view({ entries: [free] })).find((b) => b.type === 'section' && b.text?.text.includes('ds_2'))!.text!.text;
    const line = (id: string) => text.split('\n').find((l) => l.includes(id))!;
    expect(line('ds_2')).toMatch(/ · free$/);
    expect(line('run_1:run_2')).toMatch(/ · free$/);
    expect(line('run_3')).toMatch(/ · free$/);
    expect(line('run_4')).toMatch(/ · not charged$/);
    expect(text).not.toMatch(/0\.00 credits/);
  });

  it('shows the header totals and the balance, or says it is unavailable', () => {
    const fields = blocksOf(view()).find((b) => b.fields)!.fields!.map((f) => f.text);
    expect(fields).toEqual([
      '*Loops in progress*\n2',
      '*Credits this week*\n52.50 (incl. ~40.00 in flight)',
      '*Agent cost this week*\n$0.4200 (7 turns)',
      '*Balance*\n1,234.50 credits',
    ]);
    expect(JSON.stringify(view({ balance: null }).blocks)).toContain('*Balance*\\n_unavailable_');
    expect(JSON.stringify(view({ balance: { credits: 100, available: 60 } }).blocks)).toContain('100.00 credits (60.00 available)');
  });

  it('cuts long texts and many resources instead of failing', () => {
    const huge = entry({
      triggerLabel: 'L'.repeat(5000),
      summary: `${'word '.repeat(3000)}<https://example.com|a link that would be cut>`,
      postPermalink: `https://acme.slack.com/${'p'.repeat(5000)}`,
      threadPermalink: `https://acme.slack.com/${'t'.repeat(5000)}`,
      channelId: 'C'.repeat(4000),
      resources: Array.from({ length: 50 }, (_, i) => ({
        kind: 'run',
        platformId: `run_${i}_${'x'.repeat(500)}`,
        webUrl: `https://platform.test/${'u'.repeat(900)}`,
        status: 'running'.repeat(50),
        priceEstimate: '1.0000',
        priceCharged: null,
      })),
    });
    const v = view({ entries: Array.from({ length: 30 }, () => huge), hasMore: true, page: 3, scope: 'team' });
    expect(validateView(v, 'home')).toEqual([]);
    expect(v.blocks.length).toBeLessThanOrEqual(100);
    const section = blocksOf(v).find((b) => b.type === 'section' && b.text?.text.includes('LLL'))!;
    expect(section.text!.text.length).toBeLessThanOrEqual(3000);
    expect(section.text!.text).toMatch(/\+\d+ more/);
  });

  it('does not leave half a link when cutting mrkdwn', () => {
    expect(truncateMrkdwn('see <https://example.com/very/long|the run>', 20)).toBe('see…');
    expect(truncateMrkdwn('short', 20)).toBe('short');
  });

  it('escapes labels and resource ids so they show literally', () => {
    const v = view({
      entries: [entry({ triggerLabel: 'Button: <@U2> & co', resources: [{ kind: 'run', platformId: 'a|b>c', webUrl: 'javascript:alert(1)', status: 'queued', priceEstimate: null, priceCharged: null }] })],
    });
    const text = allText(v);
    expect(text).toContain('Button: &lt;@U2&gt; &amp; co');
    expect(text).toContain('a|b&gt;c');
    expect(text).not.toContain('javascript:');
  });

  it('toggles the scope, exports the current scope, and pages within it', () => {
    const mine = buttons(view({ scope: 'mine' }));
    expect(mine.find((b) => b.action_id === ACTION_IDS.homeScope)).toMatchObject({ value: 'team', text: { text: 'Show everyone in workspace' } });
    expect(mine.find((b) => b.action_id === ACTION_IDS.homeCsv)).toMatchObject({ value: 'mine', text: { text: 'Download CSV' } });
    const team = buttons(view({ scope: 'team', page: 2, hasMore: true }));
    expect(team.find((b) => b.action_id === ACTION_IDS.homeScope && b.text.text === 'Show only mine')).toMatchObject({ value: 'mine' });
    expect(team.find((b) => b.action_id === ACTION_IDS.homeCsv)).toMatchObject({ value: 'team' });
    expect(team.find((b) => b.text.text === 'Load older')).toMatchObject({ action_id: ACTION_IDS.homeMore, value: 'team:3' });
    expect(team.find((b) => b.text.text === 'Back to newest')).toMatchObject({ action_id: ACTION_IDS.homeScope, value: 'team' });
    expect(team.find((b) => b.text.text === 'Refresh')).toMatchObject({ action_id: ACTION_IDS.homeMore, value: 'team:2' });
    expect(JSON.stringify(view({ scope: 'team', page: 2, entries: entries(3) }).blocks)).toContain('Entries 41–43 · end of the log');
  });
});

describe('formatting', () => {
  it('formats numeric strings without floats, and builds Slack date tokens', () => {
    expect(formatCredits('0.3000')).toBe('0.30');
    expect(formatCredits('1234567.1250')).toBe('1,234,567.125');
    expect(formatCredits('5')).toBe('5.00');
    expect(formatCredits(null)).toBe('0.00');
    expect(formatUsd('0.0123456789')).toBe('$0.0123');
    expect(formatUsd('12.5')).toBe('$12.50');
    expect(formatUsd('0')).toBe('$0.00');
    expect(slackDate(new Date('2026-01-01T00:00:00Z'))).toBe('<!date^1767225600^{date_short_pretty} {time}|2026-01-01 00:00 UTC>');
  });
});


describe('buildActivityCsv', () => {
  it('writes a header and one RFC 4180 row per turn, quoting commas, quotes and line breaks', () => {
    const csv = buildActivityCsv([
      entry({ summary: 'Accuracy 61%, "not bad"\nsecond line', triggerLabel: 'Button: Train, then rerun', creditsCharged: '38.2500' }),
      entry({ summary: 'plain', postPermalink: null, threadPermalink: null, resources: [], creditsEstimated: '0.0000', creditsInFlight: '0.0000' }, 2),
    ]);
    expect(csv.startsWith(`${CSV_COLUMNS.join(',')}\r\n`)).toBe(true);
    expect(csv.endsWith('\r\n')).toBe(true);
    expect(csv).toContain('"Accuracy 61%, ""not bad""\nsecond line"');
    const rows = parseCsv(csv);
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r.length === CSV_COLUMNS.length)).toBe(true);
    const [header, first, second] = rows;
    const col = (row: string[] | undefined, name: (typeof CSV_COLUMNS)[number]) => row![header!.indexOf(name)];
    expect(col(first, 'time')).toBe('2026-12-02T14:03:00.000Z');
    expect(col(first, 'trigger')).toBe('Button: Train, then rerun');
    expect(col(first, 'summary')).toBe('Accuracy 61%, "not bad"\nsecond line');
    expect(col(first, 'channel')).toBe('C0LOOP');
    expect(col(first, 'thread_permalink')).toBe('https://acme.slack.com/archives/C0LOOP/p1733150000000100');
    expect(col(first, 'resources')).toBe(
      'dataset ds_1 [ready] https://platform.test/datasets/ds_1; training tr_1 [running] est 40.0000 https://platform.test/trainings/tr_1',
    );
    expect([col(first, 'agent_cost_usd'), col(first, 'credits_estimated'), col(first, 'credits_charged')]).toEqual([
      '0.0123456789',
      '40.0000',
      '38.2500',
    ]);
    expect([col(second, 'thread_permalink'), col(second, 'resources'), col(second, 'credits_charged')]).toEqual(['', '', '']);
  });

  it('neutralizes cells a spreadsheet would run as formulas', () => {
    const rows = parseCsv(buildActivityCsv([entry({ summary: '=HYPERLINK("http://evil")', triggerLabel: '+1', resources: [] })]));
    expect(rows[1]![1]).toBe("'+1");
    expect(rows[1]![2]).toBe('\'=HYPERLINK("http://evil")');
  });

  it('quotes a lone line break, and guards formulas only in the text columns', () => {
    const csv = buildActivityCsv([entry({ summary: 'first\nsecond', triggerLabel: '＝SUM(A1)', creditsCharged: '-1.5000', resources: [] })]);
    expect(csv).toContain(',"first\nsecond",');
    const rows = parseCsv(csv);
    expect(rows).toHaveLength(2);
    expect(rows[1]![1]).toBe("'＝SUM(A1)");
    expect(rows[1]![2]).toBe('first\nsecond');
    expect(rows[1]![CSV_COLUMNS.indexOf('credits_charged')]).toBe('-1.5000');
  });

  it('writes only the header when there is nothing to export', () => {
    expect(buildActivityCsv([])).toBe(`${CSV_COLUMNS.join(',')}\r\n`);
  });
});
