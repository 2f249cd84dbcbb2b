// Renders a chart server-side, with no browser: Vega draws it as SVG, resvg rasterizes it to PNG.
// Imported only where posts are delivered (the worker role), so the web role never loads them.
import { Resvg } from '@resvg/resvg-js';
import { parse, View, type Spec } from 'vega';
import { accuracyChart, accuracyChartSpec, accuracyChartText } from './accuracy-chart.js';
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

/** SVG to PNG at twice the size, with the system's DejaVu Sans (Debian's fonts-dejavu-core). */
export function svgToPng(svg: string): { png: Buffer; width: number; height: number } {
  const resvg = new Resvg(svg, {
    fitTo: { mode: 'zoom', value: 2 },
    background: 'white',
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' },
  });
  const image = resvg.render();
  return { png: image.asPng(), width: image.width, height: image.height };
}

/** The accuracy chart of a comparison as a PNG. */
export async function renderAccuracyChart(comparison: Comparison, models: { before: string; after: string }): Promise<RenderedChart> {
  const chart = accuracyChart(comparison, models);
  const { png, width, height } = svgToPng(await specToSvg(accuracyChartSpec(chart)));
  return { png, text: accuracyChartText(chart), width, height };
}
