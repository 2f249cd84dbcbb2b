// Renders a chart server-side, with no browser: Vega draws it as SVG, resvg rasterizes it to PNG.
// Imported only where posts are delivered (the worker role), so the web role never loads them.
import { renderAsync } from '@resvg/resvg-js';
import { parse, View, type Runtime, type Spec } from 'vega';
import { ACCURACY_CHART_SPEC, accuracyChart, accuracyChartInputs, accuracyChartText, type AccuracyChart } from './accuracy-chart.js';
import type { Comparison } from '../../analysis/index.js';

export interface RenderedChart {
  png: Buffer;
  /** The chart's figures as text (alt text, the upload's comment). */
  text: string;
  width: number;
  height: number;
}

/** A Vega spec as SVG (no data loading, no renderer but the SVG string). */
export async function specToSvg(spec: Record<string, unknown>): Promise<string> {
  const view = new View(parse(spec as Spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * SVG to PNG at twice the size, with the system's DejaVu Sans (Debian's fonts-dejavu-core). Fonts are
 * loaded and the image drawn on libuv's thread pool (resvg's async render), off the event loop that
 * runs the turns; only the PNG encoding runs on it.
 */
export async function svgToPng(svg: string): Promise<{ png: Buffer; width: number; height: number }> {
  const image = await renderAsync(svg, {
    fitTo: { mode: 'zoom', value: 2 },
    background: 'white',
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' },
  });
  return { png: image.asPng(), width: image.width, height: image.height };
}

async function labelPng(text: string): Promise<Buffer> {
  const spec = {
    width: 200,
    height: 40,
    marks: [{ type: 'text', encode: { enter: { x: { value: 10 }, y: { value: 25 }, text: { value: text }, fontSize: { value: 16 } } } }],
  };
  return (await svgToPng(await specToSvg(spec))).png;
}

let fontCheck: Promise<boolean> | undefined;

/**
 * Whether resvg finds a font to draw text with. Without one it leaves every label out silently, and a
 * chart of unlabelled bars is worse than none; checked once per process by drawing a label.
 */
export function canDrawText(): Promise<boolean> {
  fontCheck ??= Promise.all([labelPng(''), labelPng('Accuracy 59.0%')]).then(([blank, written]) => !written.equals(blank));
  return fontCheck;
}

export const NO_FONT_MESSAGE = 'the chart needs a font on the machine that runs the worker: install fonts-dejavu-core (Debian, Ubuntu) or any TrueType font';

/** The chart being drawn now; the next one starts when it ends. */
let drawing: Promise<unknown> = Promise.resolve();

/**
 * The accuracy chart of a comparison as a PNG. Charts are drawn one at a time per process: each
 * holds a Vega view and a full-size image until its PNG is made, and verdicts that finish together
 * (many loops in flight) would otherwise hold them all at once (50 at once: 670 MB against 180 MB).
 */
export function renderAccuracyChart(comparison: Comparison, models: { before: string; after: string }): Promise<RenderedChart> {
  const next = drawing.then(() => drawAccuracyChart(comparison, models));
  drawing = next.catch(() => undefined);
  return next;
}

/** The accuracy chart's spec, parsed on the first chart (a parse costs about as much as drawing the SVG). */
let accuracyRuntime: Runtime | undefined;

/** One accuracy chart as SVG: a new view of the parsed spec, given the chart's size, title and bars. */
export async function accuracyChartSvg(chart: AccuracyChart): Promise<string> {
  accuracyRuntime ??= parse(ACCURACY_CHART_SPEC as Spec);
  const inputs = accuracyChartInputs(chart);
  const view = new View(accuracyRuntime, { renderer: 'none' });
  try {
    view.width(inputs.width).signal('titleText', inputs.title).signal('manyGroups', inputs.manyGroups).data('bars', inputs.bars);
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

async function drawAccuracyChart(comparison: Comparison, models: { before: string; after: string }): Promise<RenderedChart> {
  if (!(await canDrawText())) throw new Error(NO_FONT_MESSAGE);
  const chart = accuracyChart(comparison, models);
  const { png, width, height } = await svgToPng(await accuracyChartSvg(chart));
  return { png, text: accuracyChartText(chart), width, height };
}
