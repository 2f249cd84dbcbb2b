// Shares the accuracy chart of a delivered comparison post in its thread, once: the PNG is
// rendered here (worker role only: the renderer is imported on use), uploaded with Slack's external
// upload (files.getUploadURLExternal, the bytes, files.completeUploadExternal), and its state kept in
// comparison_files so a crash or a retry never shares it twice. A chart that cannot be shared leaves
// a short note on the verdict; nothing else is lost.
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ComparisonPart, Reply } from '../agent/reply.js';
import {
  markComparisonFileAttempt,
  markComparisonFileFailed,
  markComparisonFileShared,
  markComparisonFileUploading,
  type ComparisonFile,
} from '../store/comparison-files.js';
import type { Db } from '../store/db.js';
import { isLegacyPayload, type StoredPostPayload } from '../store/posts.js';
import type { Post } from '../store/tables.js';
import type { RenderedChart } from './chart/render.js';
import { SLACK_LIMITS, truncate } from './limits.js';
import { escapeMrkdwn, mentionUser } from './mrkdwn.js';

/** Tries before a chart that keeps failing for a transient reason is given up (and the verdict says so). */
export const CHART_MAX_ATTEMPTS = 3;

/** The comparison part of a stored post, if it has one. */
export function comparisonPartOf(payload: StoredPostPayload): { reply: Reply; part: ComparisonPart } | undefined {
  if (isLegacyPayload(payload)) return undefined;
  const part = payload.reply.parts.find((p): p is ComparisonPart => p.kind === 'comparison');
  return part ? { reply: payload.reply, part } : undefined;
}

/** The note a verdict carries when its chart could not be shared. */
export function chartNotes(file: Pick<ComparisonFile, 'state' | 'error'> | undefined): string[] {
  if (file?.state !== 'failed') return [];
  return [`:warning: The accuracy chart could not be shared (${file.error ?? 'unknown error'}); every figure is in the table above.`];
}

interface SlackErrorLike {
  code?: string;
  data?: { error?: string };
}

export interface ChartDeps {
  db: Db;
  writer: WebClient;
  reader: WebClient;
  logger: Logger;
  /** Waits for the channel's posting slot (the poster's pacing). */
  pace(teamId: string, channel: string): Promise<void>;
  /** Updates the delivered verdict to carry its chart note. */
  refreshVerdict(teamId: string, postId: string): Promise<void>;
}

/** Looks for a message in the thread that shares `fileId` (an upload completed before a crash). */
async function sharedInThread(reader: WebClient, post: Post, fileId: string): Promise<boolean> {
  let cursor: string | undefined;
  for (let page = 0; page < 20; page += 1) {
    const result = await reader.conversations.replies({ channel: post.channel_id, ts: post.thread_ts, limit: 200, ...(cursor ? { cursor } : {}) });
    for (const message of result.messages ?? []) {
      const files = (message as { files?: Array<{ id?: string }> }).files ?? [];
      if (files.some((f) => f.id === fileId)) return true;
    }
    cursor = result.response_metadata?.next_cursor || undefined;
    if (!cursor) return false;
  }
  return false;
}

/**
 * Shares one comparison post's chart. Throws on a transient failure (the job retries) until
 * `CHART_MAX_ATTEMPTS`; a refusal by Slack or a chart that cannot be drawn fails it at once.
 */
export async function shareComparisonChart(deps: ChartDeps, file: ComparisonFile, post: Post): Promise<void> {
  const found = comparisonPartOf(post.payload as unknown as StoredPostPayload);
  const fail = async (reason: string) => {
    deps.logger.error({ postId: post.id, reason }, 'the comparison chart was not shared');
    await markComparisonFileFailed(deps.db, file.teamId, file.id, reason);
    await deps.refreshVerdict(file.teamId, post.id);
  };
  if (!found) return fail('no comparison in the post');
  const attempt = await markComparisonFileAttempt(deps.db, file.teamId, file.id);
  if (file.state === 'uploading' && file.fileId && (await sharedInThread(deps.reader, post, file.fileId))) {
    await markComparisonFileShared(deps.db, file.teamId, file.id, file.fileId);
    return;
  }
  if (attempt > CHART_MAX_ATTEMPTS) return fail(`gave up after ${CHART_MAX_ATTEMPTS} attempts`);

  const { part, reply } = found;
  let chart: RenderedChart;
  try {
    const { renderAccuracyChart } = await import('./chart/render.js');
    chart = await renderAccuracyChart(part.comparison, { before: part.before.modelId, after: part.after.modelId });
  } catch (error) {
    deps.logger.error({ err: error, postId: post.id }, 'the comparison chart could not be drawn');
    // A missing font is the operator's to fix: its message says how (src/slack/chart/render.ts).
    const noFont = error instanceof Error && error.message.startsWith('the chart needs a font');
    return fail(noFont ? error.message : 'the chart could not be drawn');
  }
  const filename = `accuracy-${part.before.runId}-vs-${part.after.runId}.png`.replace(/[^A-Za-z0-9._-]/g, '_');
  try {
    const upload = await deps.writer.files.getUploadURLExternal({ filename, length: chart.png.length, alt_text: truncate(chart.text, 1000) });
    if (!upload.upload_url || !upload.file_id) throw new Error('files.getUploadURLExternal returned no upload_url or file_id');
    await markComparisonFileUploading(deps.db, file.teamId, file.id, upload.file_id);
    const sent = await fetch(upload.upload_url, { method: 'POST', body: new Uint8Array(chart.png), signal: AbortSignal.timeout(30_000) });
    if (!sent.ok) throw new Error(`the upload URL answered HTTP ${sent.status}`);
    await deps.pace(file.teamId, post.channel_id);
    // The title names the models (the platform's words): escaped like every such text in a post.
    const comment = `${mentionUser(reply.to)} ${escapeMrkdwn(chart.text.split('\n')[0] ?? 'Accuracy before and after')}`;
    await deps.writer.files.completeUploadExternal({
      files: [{ id: upload.file_id, title: truncate(chart.text.split('\n')[0] ?? filename, 250) }],
      channel_id: post.channel_id,
      thread_ts: post.thread_ts,
      initial_comment: truncate(comment, SLACK_LIMITS.sectionText),
    });
    await markComparisonFileShared(deps.db, file.teamId, file.id, upload.file_id);
  } catch (error) {
    const e = error as SlackErrorLike;
    if (e.code === 'slack_webapi_platform_error') return fail(`Slack answered ${e.data?.error ?? 'an error'}`);
    if (attempt >= CHART_MAX_ATTEMPTS) return fail(`${error instanceof Error ? error.message : String(error)}`.slice(0, 200));
    throw error;
  }
}
