// Files a Slack message shared, as its trigger stores them: what a turn needs to fetch one later.
import { SLACK_LIMITS } from '../slack/limits.js';

/** A file shared in a message, as stored on its trigger (Slack's own field names). */
export interface SharedFile {
  id: string;
  name: string;
  mimetype: string;
  size: number;
  url_private_download: string;
}

/** The well-formed entries of an event's `files` (at most a message's worth), or none. */
export function sharedFiles(files: unknown): SharedFile[] {
  if (!Array.isArray(files)) return [];
  const found: SharedFile[] = [];
  for (const file of files.slice(0, SLACK_LIMITS.filesPerMessage)) {
    const f = file as Partial<Record<keyof SharedFile, unknown>>;
    const url = typeof f.url_private_download === 'string' ? f.url_private_download : undefined;
    if (typeof f.id !== 'string' || !url) continue;
    found.push({
      id: f.id,
      name: typeof f.name === 'string' && f.name !== '' ? f.name : f.id,
      mimetype: typeof f.mimetype === 'string' ? f.mimetype : 'application/octet-stream',
      size: typeof f.size === 'number' && Number.isFinite(f.size) ? f.size : -1,
      url_private_download: url,
    });
  }
  return found;
}

/** The files stored on a mention or reply trigger. */
export function triggerFiles(trigger: { payload: unknown }): SharedFile[] {
  return sharedFiles((trigger.payload as { files?: unknown } | null)?.files);
}
