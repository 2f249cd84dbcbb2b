// The before/after accuracy chart's data and its Vega spec: overall and per category, each bar with
// the Wilson 95% interval the comparison already computed. Pure; rendering is in ./render.ts.
import type { Comparison, Proportion } from '../../analysis/index.js';
import { escapeMrkdwn } from '../mrkdwn.js';

export interface ChartBar {
  group: string;
  run: 'Before' | 'After';
  /** Percent. */
  rate: number;
  lower: number;
  upper: number;
  questions: number;
}

export interface AccuracyChart {
  title: string;
  bars: ChartBar[];
  /** Categories left out to keep the chart readable. */
  moreCategories: number;
}

/** Categories drawn beside the overall bars; the rest are named as "+N more" in the title. */
export const CHART_MAX_CATEGORIES = 12;
const LABEL_MAX = 24;

const label = (text: string) => (text.length <= LABEL_MAX ? text : `${text.slice(0, LABEL_MAX - 1)}…`);

/** `text` cut to `max` characters, with "~2", "~3"... when the cut makes it equal to one in `used` (which it joins). */
function distinctLabel(text: string, max: number, used: Set<string>): string {
  const cut = text.length <= max ? text : `${text.slice(0, max - 1)}…`;
  let candidate = cut;
  for (let n = 2; used.has(candidate); n += 1) candidate = `${cut.slice(0, max - String(n).length - 1)}~${n}`;
  used.add(candidate);
  return candidate;
}

function barsOf(group: string, before: Proportion, after: Proportion, questions: number): ChartBar[] {
  const bars: ChartBar[] = [];
  for (const [run, p] of [['Before', before], ['After', after]] as const) {
    if (p.rate === null) continue;
    bars.push({ group, run, rate: p.rate * 100, lower: p.interval.lower * 100, upper: p.interval.upper * 100, questions });
  }
  return bars;
}

/** The chart of a comparison: "All questions" first, then the categories (when there are several), by name. */
export function accuracyChart(comparison: Comparison, models: { before: string; after: string }): AccuracyChart {
  const o = comparison.overall;
  const used = new Set<string>();
  const bars = barsOf(distinctLabel(`All (${o.questions})`, LABEL_MAX + 10, used), o.accuracyBefore, o.accuracyAfter, o.questions);
  const categories = comparison.categories.length > 1 ? comparison.categories : [];
  for (const c of categories.slice(0, CHART_MAX_CATEGORIES)) {
    bars.push(...barsOf(distinctLabel(`${label(c.category)} (${c.questions})`, LABEL_MAX + 10, used), c.accuracyBefore, c.accuracyAfter, c.questions));
  }
  const moreCategories = Math.max(0, categories.length - CHART_MAX_CATEGORIES);
  const what = comparison.scoring === 'graded' ? 'Full marks' : 'Accuracy';
  const title = `${what} before (${label(models.before)}) and after (${label(models.after)}), 95% CI${moreCategories > 0 ? ` (+${moreCategories} more categories)` : ''}`;
  return { title, bars, moreCategories };
}

/** What one chart sets on the shared spec ({@link ACCURACY_CHART_SPEC}): its size, title and bars. */
export interface AccuracyChartInputs {
  width: number;
  title: string;
  /** More than six groups: the axis labels are slanted. */
  manyGroups: boolean;
  bars: ChartBar[];
}

export function accuracyChartInputs(chart: AccuracyChart): AccuracyChartInputs {
  const groups = new Set(chart.bars.map((b) => b.group)).size;
  return { width: Math.max(360, groups * 90), title: chart.title, manyGroups: groups > 6, bars: chart.bars };
}

/**
 * The Vega spec of every accuracy chart: grouped bars per group, Before and After side by side, an
 * interval rule on each. A chart's own figures come in as the `bars` data and the `titleText` and
 * `manyGroups` signals (see {@link accuracyChartInputs}), so the spec is parsed once per process.
 */
export const ACCURACY_CHART_SPEC: Record<string, unknown> = {
  $schema: 'https://vega.github.io/schema/vega/v6.json',
  width: 360,
  height: 320,
  padding: 12,
  background: 'white',
  config: { text: { font: 'DejaVu Sans' }, axis: { labelFont: 'DejaVu Sans', titleFont: 'DejaVu Sans' }, legend: { labelFont: 'DejaVu Sans', titleFont: 'DejaVu Sans' }, title: { font: 'DejaVu Sans' } },
  signals: [
    { name: 'titleText', value: '' },
    { name: 'manyGroups', value: false },
  ],
  title: { text: { signal: 'titleText' }, fontSize: 14, anchor: 'start' },
  data: [{ name: 'bars', values: [] }],
  scales: [
    { name: 'x', type: 'band', domain: { data: 'bars', field: 'group' }, range: 'width', padding: 0.25 },
    { name: 'y', type: 'linear', domain: [0, 100], range: 'height', nice: true },
    { name: 'color', type: 'ordinal', domain: ['Before', 'After'], range: ['#9aa5b1', '#2b6cb0'] },
  ],
  axes: [
    { orient: 'bottom', scale: 'x', labelAngle: { signal: 'manyGroups ? -30 : 0' }, labelAlign: { signal: "manyGroups ? 'right' : 'center'" }, labelLimit: 160 },
    { orient: 'left', scale: 'y', title: 'percent of questions', grid: true, format: 'd' },
  ],
  legends: [{ fill: 'color', orient: 'top-right', direction: 'horizontal' }],
  marks: [
    {
      type: 'group',
      from: { facet: { data: 'bars', name: 'facet', groupby: 'group' } },
      encode: { enter: { x: { scale: 'x', field: 'group' } } },
      signals: [{ name: 'groupWidth', update: "bandwidth('x')" }],
      scales: [{ name: 'pos', type: 'band', range: { signal: '[0, groupWidth]' }, domain: ['Before', 'After'], padding: 0.1 }],
      marks: [
        {
          type: 'rect',
          from: { data: 'facet' },
          encode: {
            enter: {
              x: { scale: 'pos', field: 'run' },
              width: { scale: 'pos', band: 1 },
              y: { scale: 'y', field: 'rate' },
              y2: { scale: 'y', value: 0 },
              fill: { scale: 'color', field: 'run' },
            },
          },
        },
        {
          type: 'rule',
          from: { data: 'facet' },
          encode: {
            enter: {
              x: { scale: 'pos', field: 'run', band: 0.5 },
              y: { scale: 'y', field: 'lower' },
              y2: { scale: 'y', field: 'upper' },
              stroke: { value: '#1a202c' },
              strokeWidth: { value: 1.5 },
            },
          },
        },
        {
          type: 'text',
          from: { data: 'facet' },
          encode: {
            enter: {
              x: { scale: 'pos', field: 'run', band: 0.5 },
              y: { scale: 'y', field: 'upper', offset: -4 },
              align: { value: 'center' },
              fontSize: { value: 10 },
              fill: { value: '#1a202c' },
              text: { signal: "format(datum.rate, '.1f') + '%'" },
            },
          },
        },
      ],
    },
  ],
};

/** The chart as words: the image's alt text and the upload's comment. */
export function accuracyChartText(chart: AccuracyChart): string {
  const byGroup = new Map<string, ChartBar[]>();
  for (const b of chart.bars) byGroup.set(b.group, [...(byGroup.get(b.group) ?? []), b]);
  const lines = [...byGroup].map(([group, bars]) => `${group}: ${bars.map((b) => `${b.run.toLowerCase()} ${b.rate.toFixed(1)}% (${b.lower.toFixed(1)}–${b.upper.toFixed(1)})`).join(', ')}`);
  return [chart.title, ...lines].join('\n');
}

/** Slack's data visualization block (docs: reference/block-kit/blocks/data-visualization-block); not in @slack/types 3.2. */
export interface DataVisualizationBlock {
  type: 'data_visualization';
  title: string;
  chart: {
    type: 'bar';
    series: Array<{ name: string; data: Array<{ label: string; value: number }> }>;
    axis_config: { categories: string[]; x_label?: string; y_label?: string };
  };
}

/** Slack's documented limits of that block: title and axis labels 50 characters, category labels 20. */
export const CHART_BLOCK_LIMITS = { title: 50, axisLabel: 50, categoryLabel: 20, series: 6, categories: 20 } as const;

/**
 * The chart as Slack's own bar chart (no intervals: the PNG in the thread has them). Category labels
 * are cut to 20 characters and kept distinct.
 */
export function accuracyChartBlock(chart: AccuracyChart): DataVisualizationBlock {
  const groups = [...new Set(chart.bars.map((b) => b.group))].slice(0, CHART_BLOCK_LIMITS.categories);
  const used = new Set<string>();
  // Category names come from the platform: escaped like every such text in a post.
  const labels = new Map(groups.map((group) => [group, distinctLabel(escapeMrkdwn(group), CHART_BLOCK_LIMITS.categoryLabel, used)]));
  const series = (['Before', 'After'] as const).map((run) => ({
    name: run,
    data: groups.map((group) => ({ label: labels.get(group)!, value: Math.round((chart.bars.find((b) => b.group === group && b.run === run)?.rate ?? 0) * 10) / 10 })),
  }));
  return {
    type: 'data_visualization',
    title: 'Accuracy before and after (%)',
    chart: { type: 'bar', series, axis_config: { categories: groups.map((g) => labels.get(g)!), y_label: 'percent of questions' } },
  };
}
