// End to end on a large benchmark: the whole loop on the sandbox's 2,500-question built-in benchmark
// (simulated runs), and the verdict's data table and chart within Slack's limits, their counts the
// platform's own per-question results.
import { afterEach, describe, expect, it } from 'vitest';
import { formatCount } from '../../src/analysis/index.js';
import type { Platform, QuestionResult } from '@verdict/contract/platform';
import { SLACK_LIMITS } from '../../src/slack/limits.js';
import { sandboxCounts, startHarness, waitForVerdict, type Harness } from '../kit/harness.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';
import { waitUntil } from '../kit/wait.js';

const OWNER = 'UOWNER';
/**
 * The sandbox simulates runs of its built-in catalogue only (a BENCHMARKS_DIR file or an upload runs
 * on a real engine), so the large benchmark is the catalogue's knowledge-mcq-2500.
 */
const BENCHMARK = '305';
const QUESTIONS = 2500;

type Cell = { type: string; text: string };
interface DataTable { type: 'data_table'; caption: string; page_size?: number; rows: Cell[][] }

/** Every per-question result of a run, paged through the platform's API. */
async function allResults(platform: Platform, runId: string): Promise<QuestionResult[]> {
  const out: QuestionResult[] = [];
  let cursor: string | null = null;
  do {
    const page: { items: QuestionResult[]; nextCursor: string | null } = await platform.listRunResults(runId, cursor ? { cursor } : {});
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

describe('the loop on a 2,500-question benchmark', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('posts a verdict whose data table and chart stay within Slack limits, counts from the platform', async () => {
    const started = performance.now();
    // Training on ~1,400 failures costs about 295 credits, above the default 200 that asks for an Approve click.
    h = await startHarness({ script: loopScript(), env: { SPEND_CONFIRM_THRESHOLD: '500' } });
    const mention = await h.mention({ user: OWNER, text: SEED_MESSAGE.replaceAll('benchmark 104', `benchmark ${BENCHMARK}`) });
    expect(mention.status).toBe(200);
    const verdict = await waitForVerdict(h, mention.ts, 120_000).catch(async (error: unknown) => {
      // What the thread got instead, and the bot's last words: a timeout alone says nothing.
      const posts = h!.posts(mention.ts).map((p) => p.text.slice(0, 300));
      throw new Error(`${(error as Error).message}\nposts: ${JSON.stringify(posts, null, 1)}\nlog tail: ${(await h!.logs()).split('\n').slice(-15).join('\n')}`);
    });
    const files = () => h!.filePosts(mention.ts);
    const charts = await waitUntil(() => (files().length > 0 ? files() : undefined), 60_000, 'the comparison chart');
    const loopMs = performance.now() - started;
    console.log(`large-benchmark e2e: mention to chart in ${(loopMs / 1000).toFixed(1)} s`);

    expect(await sandboxCounts(h.db.db)).toEqual({ runs: 2, trainings: 1, datasets: 1 });
    const runs = await h.db.db.selectFrom('resources').select('platform_id').where('kind', '=', 'run').orderBy('id').execute();
    const platform = h.bot()!.platform;
    const [before, after] = await Promise.all(runs.map((r) => allResults(platform, r.platform_id)));
    for (const r of runs) expect((await platform.getRun(r.platform_id)).benchmarkId).toBe(BENCHMARK);
    expect(before).toHaveLength(QUESTIONS);
    expect(after).toHaveLength(QUESTIONS);

    // Fixed, broken and still wrong, paired by question id from the two runs' results.
    const afterById = new Map(after!.map((q) => [q.questionId, q.correct]));
    const count = { fixed: 0, broken: 0, stillWrong: 0, bothRight: 0 };
    for (const q of before!) {
      const now = afterById.get(q.questionId);
      expect(now, `question ${q.questionId} in both runs`).not.toBeUndefined();
      if (!q.correct && now) count.fixed += 1;
      else if (q.correct && !now) count.broken += 1;
      else if (!q.correct) count.stillWrong += 1;
      else count.bothRight += 1;
    }
    console.log(`large-benchmark e2e: ${JSON.stringify(count)} from the platform's per-question results`);
    // A large run has enough of each outcome that every list is cut.
    expect(count.fixed).toBeGreaterThan(100);
    expect(count.broken).toBeGreaterThan(0);

    const blocks = verdict.blocks as Array<{ type: string; rows?: Cell[][] }>;
    expect(blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocksPerMessage);

    // The summary table's counts are the same.
    const table = blocks.find((b) => b.type === 'table')!;
    const row = (label: string) => table.rows!.find((r) => r[0]!.text.startsWith(label))!.map((c) => c.text);
    const asNumber = (s: string) => Number(s.replace(/,/g, ''));
    expect(row('All questions')[0]).toBe(`All questions (${formatCount(QUESTIONS)})`);
    expect(asNumber(row('Fixed')[2]!)).toBe(count.fixed);
    expect(asNumber(row('Broken')[2]!)).toBe(count.broken);
    expect(asNumber(row('Both wrong')[2]!)).toBe(count.stillWrong);
    expect(asNumber(row('Both right')[2]!)).toBe(count.bothRight);

    // The data table: Slack's documented limits, a caption with the platform's counts, "+N more" where cut.
    const dataTables = blocks.filter((b) => b.type === 'data_table') as unknown as DataTable[];
    expect(dataTables).toHaveLength(1);
    const dataTable = dataTables[0]!;
    expect(dataTable.caption).toBe(
      `Questions that changed: ${formatCount(count.fixed)} fixed, ${formatCount(count.broken)} broken, ${formatCount(count.stillWrong)} still wrong`,
    );
    expect(dataTable.rows.length).toBeGreaterThanOrEqual(2);
    expect(dataTable.rows.length - 1).toBeLessThanOrEqual(SLACK_LIMITS.dataTableRows);
    for (const r of dataTable.rows) {
      expect(r.length).toBe(dataTable.rows[0]!.length);
      expect(r.length).toBeLessThanOrEqual(SLACK_LIMITS.tableColumns);
    }
    const tableCells = (rows: Cell[][] | undefined) => (rows ?? []).flat().reduce((n, c) => n + c.text.length, 0);
    expect(tableCells(dataTable.rows) + tableCells(table.rows)).toBeLessThanOrEqual(10_000);
    expect(dataTable.page_size).toBeGreaterThanOrEqual(1);
    expect(dataTable.page_size).toBeLessThanOrEqual(100);
    const data = dataTable.rows.slice(1).map((r) => r.map((c) => c.text));
    for (const [label, total] of [['Fixed', count.fixed], ['Broken', count.broken], ['Still wrong', count.stillWrong]] as const) {
      const mine = data.filter((r) => r[0] === label);
      const more = mine.filter((r) => /^\+[\d,]+ more /.test(r[2]!));
      const listed = mine.length - more.length;
      if (listed < total) {
        expect(more.map((r) => r[2]), `${label}: one "+N more" row`).toEqual([`+${formatCount(total - listed)} more ${label.toLowerCase()}`]);
      } else {
        expect(more, `${label}: all listed, no "+N more"`).toEqual([]);
        expect(listed).toBe(total);
      }
    }
    expect(data.filter((r) => r[0] === 'Fixed').length).toBeLessThan(count.fixed);

    // The chart: one PNG, shared once, right after the verdict in the thread.
    expect(charts).toHaveLength(1);
    const thread = h.slack.messages('C0LOOP', mention.ts).filter((m) => !m.seeded);
    const at = thread.findIndex((m) => m.ts === verdict.ts);
    expect(thread[at + 1]?.ts, 'the message after the verdict').toBe(charts[0]!.ts);
    const [file] = charts[0]!.files!;
    const content = h.slack.files.get(file!.id)!.content;
    expect(content.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(h.filePosts(mention.ts)).toHaveLength(1);

    expect(h.slack.violations).toEqual([]);
  }, 240_000);
});
