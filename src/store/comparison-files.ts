// The chart of each comparison post: its upload state, so a chart is shared once even when the
// worker crashes or the job is retried mid-upload. Also the render level a post was delivered at.
import type { Db } from './db.js';
import type { ComparisonFileState } from './tables.js';

export interface ComparisonFile {
  id: string;
  teamId: string;
  chatId: string;
  postId: string;
  state: ComparisonFileState;
  fileId: string | null;
  attempts: number;
  error: string | null;
}

const toFile = (r: { id: string; team_id: string; chat_id: string; post_id: string; state: ComparisonFileState; file_id: string | null; attempts: number; error: string | null }): ComparisonFile => ({
  id: r.id,
  teamId: r.team_id,
  chatId: r.chat_id,
  postId: r.post_id,
  state: r.state,
  fileId: r.file_id,
  attempts: r.attempts,
  error: r.error,
});

/** Registers the chart of a comparison post (once: a second call is a no-op). */
export async function ensureComparisonFile(db: Db, post: { teamId: string; chatId: string; postId: string }): Promise<void> {
  await db
    .insertInto('comparison_files')
    .values({ team_id: post.teamId, chat_id: post.chatId, post_id: post.postId })
    .onConflict((oc) => oc.column('post_id').doNothing())
    .execute();
}

/** The charts of a chat still to share, whose posts are delivered, oldest first. */
export async function openComparisonFiles(db: Db, teamId: string, chatId: string): Promise<ComparisonFile[]> {
  const rows = await db
    .selectFrom('comparison_files as f')
    .innerJoin('posts as p', 'p.id', 'f.post_id')
    .select(['f.id', 'f.team_id', 'f.chat_id', 'f.post_id', 'f.state', 'f.file_id', 'f.attempts', 'f.error'])
    .where('f.team_id', '=', teamId)
    .where('f.chat_id', '=', chatId)
    .where('f.state', 'in', ['pending', 'uploading'])
    .where('p.status', '=', 'posted')
    .orderBy('f.id')
    .execute();
  return rows.map(toFile);
}

export async function getComparisonFile(db: Db, teamId: string, postId: string): Promise<ComparisonFile | undefined> {
  const row = await db
    .selectFrom('comparison_files')
    .select(['id', 'team_id', 'chat_id', 'post_id', 'state', 'file_id', 'attempts', 'error'])
    .where('team_id', '=', teamId)
    .where('post_id', '=', postId)
    .executeTakeFirst();
  return row ? toFile(row) : undefined;
}

/** Counts an attempt at sharing the chart; returns the attempt number. */
export async function markComparisonFileAttempt(db: Db, teamId: string, id: string): Promise<number> {
  const row = await db
    .updateTable('comparison_files')
    .set((eb) => ({ attempts: eb('attempts', '+', 1), updated_at: new Date() }))
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returning('attempts')
    .executeTakeFirstOrThrow();
  return row.attempts;
}

/** Records the file Slack gave the upload, before its bytes are sent: a retry looks for it first. */
export async function markComparisonFileUploading(db: Db, teamId: string, id: string, fileId: string): Promise<void> {
  await db.updateTable('comparison_files').set({ state: 'uploading', file_id: fileId, updated_at: new Date() }).where('team_id', '=', teamId).where('id', '=', id).execute();
}

export async function markComparisonFileShared(db: Db, teamId: string, id: string, fileId: string): Promise<void> {
  await db.updateTable('comparison_files').set({ state: 'shared', file_id: fileId, error: null, updated_at: new Date() }).where('team_id', '=', teamId).where('id', '=', id).execute();
}

export async function markComparisonFileFailed(db: Db, teamId: string, id: string, error: string): Promise<void> {
  await db.updateTable('comparison_files').set({ state: 'failed', error, updated_at: new Date() }).where('team_id', '=', teamId).where('id', '=', id).execute();
}

/** Records how rich a delivered post is (its fallback level), so later updates render it the same way. */
export async function setPostRenderLevel(db: Db, teamId: string, postId: string, level: string): Promise<void> {
  await db.updateTable('posts').set({ render_level: level }).where('team_id', '=', teamId).where('id', '=', postId).execute();
}
