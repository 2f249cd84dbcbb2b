// Block Kit for the App Home tab (the Activity log) and the CSV export of the same entries.
import { stringify } from 'csv-stringify/sync';
import type { ActivityEntry, ActivityResource, ActivityScope, ActivityTotals } from '../../store/activity-queries.js';
import { ACTION_IDS } from '../action-ids.js';
import { SLACK_LIMITS, truncate } from '../limits.js';
import { escapeMrkdwn, fromModelMarkdown, link, mentionChannel, mentionUser, truncateMrkdwn } from '../mrkdwn.js';
import { feedbackLine, feedbackVotesCell } from './feedback.js';
import { capBlocks } from './reply.js';

export { escapeMrkdwn, truncateMrkdwn };

/**
 * Entries per page. Each entry takes exactly {@link BLOCKS_PER_ENTRY} blocks and the rest of the
 * view at most {@link FIXED_BLOCKS}, so a page is at most 20 * 3 + 7 = 67 blocks whatever the entries hold.
 */
export const HOME_PAGE_SIZE = 20;
export const BLOCKS_PER_ENTRY = 3;
export const FIXED_BLOCKS = 7;

const SUMMARY_MAX = 300;
const LABEL_MAX = 120;
const RESOURCE_LINES_MAX = 5;

/** The platform balance as the header shows it; `available` excludes credits reserved by in-flight work. */
export interface HomeBalance {
  credits: number;
  available?: number;
}

export interface HomeViewInput {
  entries: readonly ActivityEntry[];
  totals: ActivityTotals;
  scope: ActivityScope;
  page: number;
  hasMore: boolean;
  balance: HomeBalance | number | null;
  /** Where the viewer and the workspace stand against the spending caps this period. */
  spending?: HomeSpending;
}

export interface HomeSpending {
  person: number;
  personCap: number;
  workspace: number;
  workspaceCap: number;
  periodDays: number;
}

export interface HomeView {
  type: 'home';
  blocks: unknown[];
}

const mrkdwn = (text: string) => ({ type: 'mrkdwn', text });
const plain = (text: string) => ({ type: 'plain_text', text, emoji: true });

/** Joins lines while they fit in `max`, then says how many were left out. */
function fitLines(lines: readonly string[], max: number): string {
  const kept: string[] = [];
  let length = 0;
  for (const [i, line] of lines.entries()) {
    const rest = lines.length - i - 1;
    const reserve = rest > 0 ? 24 : 0;
    const piece = truncateMrkdwn(line, max - reserve);
    if (length + piece.length + (kept.length > 0 ? 1 : 0) > max - reserve) {
      kept.push(`_…+${lines.length - i} more_`);
      break;
    }
    kept.push(piece);
    length += piece.length + (kept.length > 1 ? 1 : 0);
  }
  return truncateMrkdwn(kept.join('\n'), max) || ' ';
}

const isPositive = (decimal: string | null): boolean => decimal !== null && /[1-9]/.test(decimal) && !decimal.trim().startsWith('-');

/** Formats a numeric decimal string as credits: thousands separators, at least two decimals, no float. */
export function formatCredits(decimal: string | null): string {
  if (decimal === null || !/^-?\d+(\.\d+)?$/.test(decimal.trim())) return '0.00';
  const [whole = '0', fraction = ''] = decimal.trim().split('.');
  const negative = whole.startsWith('-');
  const digits = negative ? whole.slice(1) : whole;
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const trimmed = fraction.replace(/0+$/, '').padEnd(2, '0');
  return `${negative ? '-' : ''}${grouped}.${trimmed}`;
}

/** Formats a USD decimal string for display: cents from $1, four decimals below. */
export function formatUsd(decimal: string | null): string {
  const value = Number(decimal ?? 0);
  if (!Number.isFinite(value)) return '$0.00';
  return `$${value >= 1 || value === 0 ? value.toFixed(2) : value.toFixed(4)}`;
}

function formatBalance(balance: HomeBalance | number | null): string {
  if (balance === null) return '_unavailable_';
  const b = typeof balance === 'number' ? { credits: balance } : balance;
  if (!Number.isFinite(b.credits)) return '_unavailable_';
  const fmt = (n: number) => n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const available = b.available !== undefined && b.available !== b.credits ? ` (${fmt(b.available)} available)` : '';
  return `${fmt(b.credits)} credits${available}`;
}

/** Slack date token: shown in the viewer's time zone, with a UTC fallback. */
export function slackDate(date: Date): string {
  const unix = Math.floor(date.getTime() / 1000);
  const fallback = `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return `<!date^${unix}^{date_short_pretty} {time}|${fallback}>`;
}

const KIND_LABELS: Record<string, string> = {
  run: ':bar_chart: Run',
  dataset: ':card_file_box: Dataset',
  training: ':brain: Training',
  comparison: ':scales: Comparison',
};

function resourceLine(resource: ActivityResource): string {
  const kind = KIND_LABELS[resource.kind] ?? escapeMrkdwn(truncate(resource.kind, 40));
  const id = truncate(resource.platformId || 'unknown', LABEL_MAX);
  const parts = [`${kind} ${link(resource.webUrl, id)}`, escapeMrkdwn(truncate(resource.status, 40))];
  // Free items (a dataset, a comparison) say so rather than "~0.00 credits est.".
  if (resource.priceCharged !== null) {
    if (isPositive(resource.priceCharged)) parts.push(`${formatCredits(resource.priceCharged)} credits charged`);
    else parts.push(resource.status === 'failed' ? 'not charged' : 'free');
  } else if (resource.priceEstimate !== null && resource.status !== 'failed') {
    parts.push(isPositive(resource.priceEstimate) ? `~${formatCredits(resource.priceEstimate)} credits est.` : 'free');
  }
  return `• ${parts.join(' · ')}`;
}

function summaryLine(entry: ActivityEntry): string {
  const oneLine = entry.summary.replace(/\s*\n\s*/g, ' ').trim();
  const summary = oneLine ? truncateMrkdwn(fromModelMarkdown(oneLine, { ownerUserId: entry.ownerUserId }), SUMMARY_MAX) : '_(no message)_';
  const message = entry.postPermalink ? `  ${link(entry.postPermalink, 'view message')}` : '';
  return `${summary}${message}`;
}

function entryCost(entry: ActivityEntry): string {
  const credits: string[] = [];
  if (entry.creditsCharged !== null) credits.push(`${formatCredits(entry.creditsCharged)} charged`);
  if (isPositive(entry.creditsInFlight)) credits.push(`~${formatCredits(entry.creditsInFlight)} est. (in flight)`);
  let platform = 'no platform credits';
  if (credits.length > 0) platform = `credits ${credits.join(' + ')}`;
  else if (isPositive(entry.creditsEstimated)) platform = `credits ~${formatCredits(entry.creditsEstimated)} est.`;
  return `Agent cost ${formatUsd(entry.agentCostUsd)} · ${platform}`;
}

function entryBlocks(entry: ActivityEntry, scope: ActivityScope): unknown[] {
  const title = `*${escapeMrkdwn(truncate(entry.triggerLabel || entry.triggerKind, LABEL_MAX))}*  ·  ${slackDate(entry.createdAt)}`;
  const lines = [title, summaryLine(entry)];
  const shown = entry.resources.slice(0, RESOURCE_LINES_MAX);
  if (shown.length > 0) lines.push('*Started:*', ...shown.map(resourceLine));
  if (entry.resources.length > shown.length) lines.push(`_…+${entry.resources.length - shown.length} more resources_`);
  if (entry.feedback) lines.push(feedbackLine(entry.feedback));

  const chat = [mentionChannel(entry.channelId)];
  if (entry.threadPermalink) chat.push(link(entry.threadPermalink, 'thread'));
  else if (entry.postPermalink) chat.push(link(entry.postPermalink, 'thread'));
  if (scope === 'team') chat.push(mentionUser(entry.ownerUserId));
  return [
    { type: 'section', text: mrkdwn(fitLines(lines, SLACK_LIMITS.sectionText)) },
    {
      type: 'context',
      elements: [
        mrkdwn(truncateMrkdwn(entryCost(entry), SLACK_LIMITS.contextText)),
        mrkdwn(truncateMrkdwn(chat.join(' · '), SLACK_LIMITS.contextText)),
      ],
    },
    { type: 'divider' },
  ];
}

function spendingFields(s: HomeSpending): string[] {
  const standing = (spent: number, cap: number) =>
    `${formatCredits(spent.toFixed(4))} of ${formatCredits(cap.toFixed(4))} credits${spent >= cap ? ' (reached: launches need an Approve click)' : ''}`;
  return [
    `*Your spending cap (last ${s.periodDays} days)*\n${standing(s.person, s.personCap)}`,
    `*Workspace cap (last ${s.periodDays} days)*\n${standing(s.workspace, s.workspaceCap)}`,
  ];
}

function headerBlocks(input: HomeViewInput, page: number): unknown[] {
  const { totals, scope } = input;
  const inFlight = isPositive(totals.creditsInFlight) ? ` (incl. ~${formatCredits(totals.creditsInFlight)} in flight)` : '';
  const fields = [
    `*Loops in progress*\n${totals.loopsInProgress}`,
    `*Credits this week*\n${formatCredits(totals.creditsSpent)}${inFlight}`,
    `*Agent cost this week*\n${formatUsd(totals.agentCostUsd)} (${totals.turns} ${totals.turns === 1 ? 'turn' : 'turns'})`,
    `*Balance*\n${formatBalance(input.balance)}`,
    ...(input.spending ? spendingFields(input.spending) : []),
  ].map((text) => mrkdwn(truncateMrkdwn(text, SLACK_LIMITS.sectionFieldText)));
  const other: ActivityScope = scope === 'mine' ? 'team' : 'mine';
  return [
    { type: 'header', text: plain('Activity log') },
    {
      type: 'context',
      elements: [
        mrkdwn(
          `${scope === 'mine' ? 'Your loops' : 'Everyone in this workspace'} · newest first · "this week" is the last 7 days`,
        ),
      ],
    },
    { type: 'section', fields },
    {
      type: 'actions',
      elements: [
        {
          type: 'button',
          text: plain(other === 'team' ? 'Show everyone in workspace' : 'Show only mine'),
          action_id: ACTION_IDS.homeScope,
          value: other,
        },
        { type: 'button', text: plain('Download CSV'), action_id: ACTION_IDS.homeCsv, value: scope },
        { type: 'button', text: plain('Refresh'), action_id: ACTION_IDS.homeMore, value: `${scope}:${page}` },
      ],
    },
    { type: 'divider' },
  ];
}

function emptyText(scope: ActivityScope, page: number): string {
  if (page > 0) return 'No older entries.';
  return scope === 'mine'
    ? 'Nothing yet. Mention me in a channel with the benchmark and model you want, and every step of the loop shows up here.'
    : 'Nobody in this workspace has started a loop yet.';
}

/**
 * The Home tab: totals, the scope toggle and CSV button, one page of entries, then paging. Takes at
 * most {@link HOME_PAGE_SIZE} entries (more are treated as "there is more") and never exceeds
 * Slack's 100-block view limit or any text limit: long texts are cut, not refused.
 */
export function buildHomeView(input: HomeViewInput): HomeView {
  const page = Number.isFinite(input.page) && input.page > 0 ? Math.floor(input.page) : 0;
  const entries = input.entries.slice(0, HOME_PAGE_SIZE);
  const hasMore = input.hasMore || input.entries.length > HOME_PAGE_SIZE;
  const blocks: unknown[] = headerBlocks(input, page);

  if (entries.length === 0) blocks.push({ type: 'section', text: mrkdwn(emptyText(input.scope, page)) });
  for (const entry of entries) blocks.push(...entryBlocks(entry, input.scope));

  const nav: unknown[] = [];
  if (hasMore) {
    nav.push({
      type: 'button',
      text: plain('Load older'),
      action_id: ACTION_IDS.homeMore,
      value: `${input.scope}:${page + 1}`,
    });
  }
  if (page > 0) {
    nav.push({ type: 'button', text: plain('Back to newest'), action_id: ACTION_IDS.homeScope, value: input.scope });
  }
  if (nav.length > 0) blocks.push({ type: 'actions', elements: nav });
  if (entries.length > 0) {
    const first = page * HOME_PAGE_SIZE + 1;
    const last = first + entries.length - 1;
    const range = first === last ? `Entry ${first}` : `Entries ${first}–${last}`;
    blocks.push({
      type: 'context',
      elements: [mrkdwn(`${range}${hasMore ? '' : ' · end of the log'} · times in your time zone`)],
    });
  }
  return { type: 'home', blocks: capBlocks(blocks, SLACK_LIMITS.blocksPerView) };
}

export const CSV_COLUMNS = [
  'time',
  'trigger',
  'summary',
  'channel',
  'thread_permalink',
  'resources',
  'agent_cost_usd',
  'credits_estimated',
  'credits_charged',
  'user',
  'message_permalink',
  'feedback_positive',
  'feedback_negative',
  'votes',
] as const;

function csvResources(resources: readonly ActivityResource[]): string {
  return resources
    .map((r) =>
      [
        `${r.kind} ${r.platformId}`,
        `[${r.status}]`,
        r.priceEstimate !== null ? `est ${r.priceEstimate}` : '',
        r.priceCharged !== null ? `charged ${r.priceCharged}` : '',
        r.webUrl ?? '',
      ]
        .filter(Boolean)
        .join(' '),
    )
    .join('; ');
}

/** Columns holding text people or the model wrote: a spreadsheet must not run it as a formula. */
const TEXT_COLUMNS: ReadonlySet<string> = new Set<(typeof CSV_COLUMNS)[number]>(['trigger', 'summary', 'resources']);

/**
 * The Activity log as RFC 4180 CSV: a header row, then one row per turn, CRLF line ends; a field is
 * quoted when it holds a comma, quote or line break. Text that a spreadsheet would run as a formula
 * (leading = + - @ tab or CR) gets a leading `'`.
 */
export function buildActivityCsv(rows: readonly ActivityEntry[]): string {
  const records = rows.map(
    (row): Record<(typeof CSV_COLUMNS)[number], string | null> => ({
      time: row.createdAt.toISOString(),
      trigger: row.triggerLabel,
      summary: row.summary,
      channel: row.channelId,
      thread_permalink: row.threadPermalink ?? row.postPermalink,
      resources: csvResources(row.resources),
      agent_cost_usd: row.agentCostUsd,
      credits_estimated: row.creditsEstimated,
      credits_charged: row.creditsCharged,
      user: row.ownerUserId,
      message_permalink: row.postPermalink,
      feedback_positive: String(row.feedback?.positive ?? 0),
      feedback_negative: String(row.feedback?.negative ?? 0),
      votes: feedbackVotesCell(row.feedback),
    }),
  );
  return stringify(records, {
    header: true,
    columns: [...CSV_COLUMNS],
    record_delimiter: 'windows',
    quote_record_delimiter: true,
    cast: { string: (value, { column }) => (TEXT_COLUMNS.has(String(column)) ? { value, escape_formulas: true } : value) },
  });
}
