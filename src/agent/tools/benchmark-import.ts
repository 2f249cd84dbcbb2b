// benchmark-import: a benchmark file shared in the thread, downloaded from Slack with the workspace's bot token and uploaded to the platform.
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { z } from 'zod';
import { failure } from '../../errors.js';
import { isPlatformError } from '@verdict/contract/errors';
import type { SharedFile } from '../../store/trigger-files.js';
import { listThreadFiles } from '../../store/triggers.js';
import { defineTool, toolError, type ToolContext } from './tool.js';

/** Largest benchmark file imported from Slack (the platform accepts uploads up to 10 MB). */
export const MAX_IMPORT_BYTES = 10_000_000;
const DOWNLOAD_TIMEOUT_MS = 30_000;
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** A benchmark id from a file name: `My Stories (v2).jsonl` -> `My-Stories-v2`. */
export function benchmarkIdFromFileName(name: string): string {
  const stem = name.replace(/\.(jsonl|ndjson|json|txt)$/i, '');
  const slug = stem
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .replace(/-+$/, '')
    .slice(0, 80);
  return slug === '' ? 'benchmark' : slug;
}

/**
 * Hosts the bot token may be sent to: Slack's file hosts, and the host of a configured
 * `SLACK_API_URL` (a Slack-compatible gateway serves its files too).
 */
function allowedHost(url: URL, ctx: ToolContext): boolean {
  if (url.protocol === 'https:' && (url.hostname === 'slack.com' || url.hostname.endsWith('.slack.com'))) return true;
  const api = ctx.config.slack.apiUrl;
  return api !== undefined && new URL(api).host === url.host;
}

async function download(file: SharedFile, ctx: ToolContext): Promise<string> {
  if (file.size > MAX_IMPORT_BYTES) {
    throw toolError(failure('import_too_large', { name: file.name, size: file.size, limit: MAX_IMPORT_BYTES }));
  }
  let url: URL;
  try {
    url = new URL(file.url_private_download);
  } catch {
    throw toolError(failure('import_no_link', { name: file.name }));
  }
  if (!allowedHost(url, ctx)) throw toolError(failure('import_not_on_slack', { name: file.name, host: url.host }));
  const token = ctx.slackToken ? await ctx.slackToken() : ctx.config.slack.botToken;
  if (!token) throw toolError(failure('import_download_failed', { name: file.name, cause: 'the workspace has no installation' }));
  let response;
  try {
    response = await request(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS),
    });
  } catch (error) {
    throw toolError(failure('import_download_failed', { name: file.name, cause: (error as Error).message }));
  }
  const type = String(response.headers['content-type'] ?? '');
  if (response.statusCode !== 200 || type.startsWith('text/html')) {
    await response.body.dump();
    throw toolError(failure('import_download_refused', { name: file.name, status: response.statusCode }));
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += (chunk as Buffer).length;
    if (size > MAX_IMPORT_BYTES) {
      response.body.destroy();
      throw toolError(failure('import_too_large', { name: file.name, size: null, limit: MAX_IMPORT_BYTES }));
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw toolError(failure('import_not_utf8', { name: file.name }));
  }
}

export const benchmarkImport = defineTool({
  name: 'benchmark-import',
  description:
    'Make a benchmark of a JSONL file someone shared in this thread: ours (id, question, answer or a list of accepted answers; optional category, choices, scorer exact|numeric|choice|contains|regex, max_tokens, stop), ' +
    'or OpenAI evals, Inspect AI, or Hugging Face rows of MMLU, ARC or GSM8K, detected from the file. ' +
    'Give the file id from the message. Returns the benchmark id to launch runs with and how the file was read (tell the person); a bad file is refused whole and the error names each bad line and field, to tell the person.',
  input: z.object({
    fileId: z.string().min(1).describe('The file id shown with the shared file, e.g. F0123ABC'),
    benchmarkId: z.string().regex(ID_PATTERN).optional().describe('Benchmark id to store it under; default from the file name'),
  }),
  run: async ({ fileId, benchmarkId }, ctx) => {
    const files = await listThreadFiles(ctx.db, ctx.chat.team_id, ctx.chat.id);
    const file = files.find((f) => f.id === fileId);
    if (!file) {
      const known = files.map((f) => `${f.id} "${f.name}"`).join(', ');
      throw toolError(failure('import_not_shared', { fileId, known }));
    }
    const content = await download(file, ctx);
    const base = benchmarkId ?? benchmarkIdFromFileName(file.name);
    const upload = (id: string) => ctx.platform.uploadBenchmark({ id, fileName: file.name, content });
    let benchmark;
    try {
      benchmark = await upload(base);
    } catch (error) {
      if (!isPlatformError(error) || error.status !== 409 || benchmarkId !== undefined) {
        if (isPlatformError(error) && error.code === 'invalid_request') throw toolError(failure('import_invalid', { detail: error.message.replace(/^POST \S+: /, '') }));
        throw error;
      }
      // The name is taken by other questions: this file's content picks a stable id of its own.
      const digest = createHash('sha256').update(content).digest('hex').slice(0, 8);
      benchmark = await upload(`${base.slice(0, 90)}-${digest}`);
    }
    ctx.logger.info({ benchmarkId: benchmark.id, fileId, questions: benchmark.questionCount }, 'benchmark imported from a shared file');
    return {
      content: JSON.stringify({
        benchmarkId: benchmark.id,
        file: file.name,
        questions: benchmark.questionCount,
        ...(benchmark.sourceFormat ? { readAs: `${benchmark.sourceFormat.name}${benchmark.sourceFormat.mapping.length ? `: ${benchmark.sourceFormat.mapping.join(', ')}` : ''}` } : {}),
        categories: benchmark.categories.map((c) => `${c.name} (${c.questionCount})`),
        pricing: benchmark.pricing,
      }),
    };
  },
});
