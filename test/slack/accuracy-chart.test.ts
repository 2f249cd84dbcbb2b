// The accuracy chart: its figures come from the comparison, and it renders to a real PNG without a browser.
import { describe, expect, it } from 'vitest';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import { accuracyChart, accuracyChartBlock, CHART_MAX_CATEGORIES } from '../../src/slack/chart/accuracy-chart.js';
import { validateBlocks } from '../kit/fakes/slack/index.js';
import { canDrawText, renderAccuracyChart } from '../../src/slack/chart/render.js';

function runs(n: number, categories: number) {
  const before: QuestionOutcome[] = [];
  const after: QuestionOutcome[] = [];
  for (let i = 0; i < n; i += 1) {
    const category = `category ${i % categories}`;
    before.push({ questionId: `q${i}`, category, correct: i % 3 === 0 });
    after.push({ questionId: `q${i}`, category, correct: i % 2 === 0 });
  }
  return compareRuns({ before, after });
}

/** Width and height from a PNG's IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

describe('accuracy chart', () => {
  it('has the overall bars first and one pair per category, with the intervals the comparison computed', () => {
    const comparison = runs(2000, 5);
    const chart = accuracyChart(comparison, { before: 'base', after: 'ft' });
    expect(chart.bars).toHaveLength(2 * 6);
    const [before, after] = chart.bars;
    expect(before).toMatchObject({ group: 'All (2000)', run: 'Before', rate: comparison.overall.accuracyBefore.rate! * 100, lower: comparison.overall.accuracyBefore.interval.lower * 100 });
    expect(after!.upper).toBeCloseTo(comparison.overall.accuracyAfter.interval.upper * 100, 10);
    for (const b of chart.bars) expect(b.lower <= b.rate && b.rate <= b.upper).toBe(true);
  });

  it(`draws at most ${CHART_MAX_CATEGORIES} categories and says how many more there are`, () => {
    const chart = accuracyChart(runs(2000, 20), { before: 'base', after: 'ft' });
    expect(new Set(chart.bars.map((b) => b.group)).size).toBe(1 + CHART_MAX_CATEGORIES);
    expect(chart.moreCategories).toBe(20 - CHART_MAX_CATEGORIES);
    expect(chart.title).toContain(`+${20 - CHART_MAX_CATEGORIES} more categories`);
  });

  it("as Slack's bar chart: the same rates, labels cut to 20 characters and kept distinct, within its limits", () => {
    const before: QuestionOutcome[] = [];
    const after: QuestionOutcome[] = [];
    for (let i = 0; i < 300; i += 1) {
      const category = `a very long category name ${i % 3}`;
      before.push({ questionId: `q${i}`, category, correct: i % 3 === 0 });
      after.push({ questionId: `q${i}`, category, correct: i % 2 === 0 });
    }
    const chart = accuracyChart(compareRuns({ before, after }), { before: 'base', after: 'ft' });
    const block = accuracyChartBlock(chart);
    expect(validateBlocks([block], 'message')).toEqual([]);
    const categories = block.chart.axis_config.categories;
    expect(new Set(categories).size).toBe(4);
    expect(categories.every((c) => c.length <= 20)).toBe(true);
    expect(block.chart.series.map((s) => s.name)).toEqual(['Before', 'After']);
    expect(block.chart.series[1]!.data[0]!.value).toBeCloseTo(chart.bars[1]!.rate, 1);
  });

  it('renders a 2,000-question comparison to a real PNG', async () => {
    const rendered = await renderAccuracyChart(runs(2000, 5), { before: 'qwen/Qwen2.5-0.5B-Instruct', after: 'ft/Qwen2.5-0.5B-Instruct-lora-1' });
    expect(rendered.png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const size = pngSize(rendered.png);
    expect(size).toEqual({ width: rendered.width, height: rendered.height });
    expect(size.width).toBeGreaterThan(600);
    expect(size.height).toBeGreaterThan(400);
    // Bars, text and axes make a PNG far bigger than a blank canvas of that size.
    expect(rendered.png.length).toBeGreaterThan(20_000);
    expect(rendered.text).toContain('All (2000): before 33.4%');
  });

  it('charts asked for together each come out as their own, and one that fails does not hold up the ones queued behind it', async () => {
    const models = { before: 'qwen/Qwen2.5-0.5B-Instruct', after: 'ft/Qwen2.5-0.5B-Instruct-lora-1' };
    const broken = renderAccuracyChart({} as ReturnType<typeof runs>, models);
    const charts = [100, 200, 300].map((n) => renderAccuracyChart(runs(n, 3), models));
    await expect(broken).rejects.toThrow();
    const texts = (await Promise.all(charts)).map((c) => c.text);
    expect(texts[0]).toContain('All (100)');
    expect(texts[1]).toContain('All (200)');
    expect(texts[2]).toContain('All (300)');
  });

  it('draws its labels: a font is found (without one, resvg leaves text out silently and no chart is rendered)', async () => {
    // Without a usable font, install fonts-dejavu-core (README); renderAccuracyChart then refuses with NO_FONT_MESSAGE.
    expect(await canDrawText()).toBe(true);
  });
});
