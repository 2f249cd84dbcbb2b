// The sandbox's web pages that `web_url` links point at: a run or a training, plain escaped HTML.
import type { RunWire, TrainingJobWire } from '@verdict/contract/contract';

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function page(title: string, rows: Array<[string, string | number | null]>): string {
  const body = rows
    .map(([key, value]) => `<tr><th>${escapeHtml(key)}</th><td>${escapeHtml(value === null ? '-' : String(value))}</td></tr>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} - BenchGen sandbox</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}th{text-align:left;padding-right:1.5rem}
.banner{background:#fff3cd;border:1px solid #e0c36c;padding:.5rem 1rem;margin-bottom:1rem}</style></head>
<body><div class="banner">SANDBOX: simulated platform, no GPU work, credits are not real.</div>
<h1>${escapeHtml(title)}</h1>
<table>
${body}
</table></body></html>
`;
}

const credits = (value: number | null) => (value === null ? null : `${value.toFixed(2)} credits`);

export function runPage(run: RunWire): string {
  const rows: Array<[string, string | number | null]> = [
    ['Status', run.status],
    ['Benchmark', run.benchmark_id],
    ['Model', run.model_id],
    ['Score', run.score === null ? null : `${(run.score * 100).toFixed(1)}%`],
    ['Price', credits(run.price_credits)],
    ['Charged', credits(run.charged_credits)],
    ['Created', run.created_at],
    ['Started', run.started_at],
    ['Finished', run.finished_at],
  ];
  for (const c of run.category_scores ?? []) rows.push([`Score: ${c.category}`, `${(c.score * 100).toFixed(1)}%`]);
  if (run.error_message) rows.push(['Error', run.error_message]);
  return page(`Benchmark run ${run.id}`, rows);
}

export function trainingPage(job: TrainingJobWire): string {
  const rows: Array<[string, string | number | null]> = [
    ['Status', job.status],
    ['Progress', `${Math.round(job.progress * 100)}%`],
    ['Dataset', job.dataset_id],
    ['Base model', job.base_model_id],
    ['Epochs', job.epochs],
    ['Trained tokens', job.trained_tokens],
    ['Estimated price', credits(job.price_estimated_credits)],
    ['Charged', credits(job.price_charged_credits)],
    ['Produced model', job.produced_model_id],
    ['Created', job.created_at],
    ['Finished', job.finished_at],
  ];
  if (job.error_message) rows.push(['Error', job.error_message]);
  return page(`LoRA training ${job.id}`, rows);
}

export function notFoundPage(what: string): string {
  return page('Not found', [['Missing', what]]);
}
