// The accuracy chart's cost per verdict, by stage: the SVG (Vega), resvg's rasterizing and the PNG
// encoding, at the size the bot draws (2x) and at 1.5x, on this process's CPU.
import { renderAsync } from '@resvg/resvg-js';
import { accuracyChartSvg, specToSvg } from '../src/slack/chart/render.js';
import { ACCURACY_CHART_SPEC, accuracyChartInputs, type AccuracyChart } from '../src/slack/chart/accuracy-chart.js';
import { envNumber, fmt, isMain, report } from './stats.js';

const ROUNDS = envNumber('BENCH_CHART_ROUNDS', 100);

/** A verdict's chart: overall and four categories, before and after. */
function sampleChart(): AccuracyChart {
  const chart: AccuracyChart = { title: 'Accuracy before (Qwen2.5-0.5B-Instruct) and after (Qwen2.5-0.5B-Instruct-lora-1), 95% CI', moreCategories: 0, bars: [] };
  for (const [i, group] of ['All (50)', 'arithmetic (12)', 'geography (13)', 'history (12)', 'science (13)'].entries()) {
    for (const run of ['Before', 'After'] as const) chart.bars.push({ group, run, rate: 40 + 7 * i + (run === 'After' ? 9 : 0), lower: 30, upper: 80, questions: 12 });
  }
  return chart;
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Mean wall and process CPU milliseconds of `f`, after twenty warm-up calls (a bot that draws charts all day runs them warm). */
async function measure(f: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  for (let i = 0; i < 20; i += 1) await f();
  const cpu = cpuMs();
  const started = performance.now();
  for (let i = 0; i < ROUNDS; i += 1) await f();
  return { wall: (performance.now() - started) / ROUNDS, cpu: (cpuMs() - cpu) / ROUNDS };
}

export async function main(): Promise<void> {
  const chart = sampleChart();
  const font = { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' };
  const svg = await accuracyChartSvg(chart);
  const line = (m: { wall: number; cpu: number }) => `${fmt(m.wall, 1)} ms wall, ${fmt(m.cpu, 1)} ms CPU`;
  report('SVG (Vega, the spec parsed once)', line(await measure(() => accuracyChartSvg(chart))));
  // The same chart with the spec parsed for it: what each verdict cost before the parse was kept.
  const inputs = accuracyChartInputs(chart);
  const own = {
    ...ACCURACY_CHART_SPEC,
    width: inputs.width,
    signals: [{ name: 'titleText', value: inputs.title }, { name: 'manyGroups', value: inputs.manyGroups }],
    data: [{ name: 'bars', values: inputs.bars }],
  };
  report('SVG (Vega, the spec parsed per chart)', line(await measure(() => specToSvg(own))));
  for (const zoom of [2, 1.5]) {
    const options = { fitTo: { mode: 'zoom' as const, value: zoom }, background: 'white', font };
    const image = await renderAsync(svg, options);
    report(`rasterize at ${zoom}x (${image.width}x${image.height}, libuv's pool)`, line(await measure(() => renderAsync(svg, options))));
    let bytes = 0;
    report(`PNG encoding at ${zoom}x (the event loop)`, line(await measure(async () => (bytes = image.asPng().length))));
    report(`PNG size at ${zoom}x`, `${fmt(bytes / 1024, 0)} KB`);
  }
}

if (isMain(import.meta.url)) await main();
