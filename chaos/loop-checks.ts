// Checks of finished loops: four posts per thread in order, and exactly one launch per step.
import type { Db } from '../src/store/db.js';
import { isVerdict, type Harness } from '../test/kit/harness.js';
import type { Checks } from './figure.js';

/** Per-thread checks of the full loop: four posts (three launch reports and the verdict), no duplicates, in order. */
export function checkLoopThread(c: Checks, h: Harness, threadTs: string, label: string, channel?: string): void {
  const failuresBefore = c.failures.length;
  const posts = h.posts(threadTs, channel);
  c.equal(posts.length, 4, `${label}: posts in the thread`);
  const keys = posts.map((p) => (p.metadata?.event_payload as { post_key?: string } | undefined)?.post_key ?? p.ts);
  c.equal(new Set(keys).size, keys.length, `${label}: distinct post keys`);
  c.check(/Launched run/.test(posts[0]?.text ?? ''), `${label}: first post is the baseline launch`);
  c.check(/Launched LoRA training/.test(posts[1]?.text ?? ''), `${label}: second post is the training launch`);
  c.check(/Launched run/.test(posts[2]?.text ?? ''), `${label}: third post is the trained-run launch`);
  c.check(posts[3] !== undefined && isVerdict(posts[3]), `${label}: fourth post is the verdict`);
  if (c.failures.length > failuresBefore) {
    c.check(false, `${label}: the thread as posted: ${JSON.stringify(posts.map((p) => p.text.slice(0, 100)))}`);
  }
}

/** Launches per chat recorded by the bot: exactly two runs and one training per finished loop. */
export async function launchesPerChat(db: Db): Promise<Map<string, { runs: number; trainings: number; datasets: number }>> {
  const rows = await db.selectFrom('resources').select(['chat_id', 'kind']).where('kind', 'in', ['run', 'training', 'dataset']).execute();
  const out = new Map<string, { runs: number; trainings: number; datasets: number }>();
  for (const row of rows) {
    const entry = out.get(row.chat_id) ?? { runs: 0, trainings: 0, datasets: 0 };
    if (row.kind === 'run') entry.runs += 1;
    else if (row.kind === 'training') entry.trainings += 1;
    else entry.datasets += 1;
    out.set(row.chat_id, entry);
  }
  return out;
}
