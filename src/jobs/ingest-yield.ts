// The worker yields to ingest: while the web role is acknowledging a burst of events, turns run one
// at a time (never none), so their commits and CPU do not stand between Slack and its ack.
//
// The web role reports what it acknowledged in the wake-up it already sends after each commit
// (src/store/wake-workers.ts, `ingest` in the `jobs:insert` payload); graphile-worker hands every
// notification to the worker's event emitter, so this needs no connection of its own, and works
// the same with web and worker replicas on other machines sharing the database.
//
// A job gives its place up while it waits on the model (`outside`): a turn waiting seconds for an
// answer uses neither CPU nor the database, so it must not hold back the others.
import { AsyncLocalStorage } from 'node:async_hooks';

/** Acknowledged events per second from which the web role counts as busy. */
export const INGEST_BUSY_PER_SECOND = 50;
/** Jobs run at once while the web role is busy: turns keep moving, one at a time. */
export const BUSY_CONCURRENCY = 1;
/** The window the rate is measured over. */
const WINDOW_MS = 1000;
const BUCKET_MS = 100;

export interface IngestYield {
  /** Records `count` events the web role acknowledged. */
  observe(count: number): void;
  /** True while the web role acknowledges at least INGEST_BUSY_PER_SECOND events a second. */
  busy(): boolean;
  /**
   * Waits for a place to run a job, and returns its release (call it once, when the job ends):
   * at once while ingest is quiet; while it is busy, when fewer than BUSY_CONCURRENCY jobs run.
   */
  admit(): Promise<() => void>;
  /** Runs `job` holding a place (waiting for one first), and gives it back when `job` ends. */
  run<T>(job: () => Promise<T>): Promise<T>;
  /**
   * Within `run`: gives the place up while `wait` runs (a call that waits on another service) and
   * takes one again after it, waiting like `admit`. Outside `run`, just `wait()`.
   */
  outside<T>(wait: () => Promise<T>): Promise<T>;
  /** Jobs holding a place, and jobs waiting for one. */
  stats(): { running: number; waiting: number };
  /** Lets every waiting job run (on shutdown). */
  close(): void;
}

export function createIngestYield(options: { now?: () => number } = {}): IngestYield {
  const now = options.now ?? Date.now;
  // Counts per BUCKET_MS slice of the last WINDOW_MS, keyed by the slice's number.
  const buckets = new Map<number, number>();
  const waiting: Array<() => void> = [];
  let running = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  // The place of the job running in this async context: its release, while it holds one.
  const places = new AsyncLocalStorage<{ release: (() => void) | undefined }>();

  const rate = (): number => {
    const current = Math.floor(now() / BUCKET_MS);
    const oldest = current - WINDOW_MS / BUCKET_MS + 1;
    let sum = 0;
    for (const [slice, count] of buckets) {
      if (slice < oldest) buckets.delete(slice);
      else sum += count;
    }
    return (sum * 1000) / WINDOW_MS;
  };
  const busy = (): boolean => !closed && rate() >= INGEST_BUSY_PER_SECOND;
  const placeFree = (): boolean => running < BUSY_CONCURRENCY || !busy();

  const grant = (): (() => void) => {
    running += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      running -= 1;
      drain();
    };
  };
  // Lets waiting jobs in, in order, as far as the current state allows; while some still wait,
  // looks again at the next slice (the burst may have ended without another notification).
  const drain = (): void => {
    while (waiting.length > 0 && placeFree()) waiting.shift()!();
    if (waiting.length > 0 && !timer) {
      timer = setTimeout(() => {
        timer = undefined;
        drain();
      }, BUCKET_MS);
      timer.unref();
    }
  };

  const admit = (): Promise<() => void> => {
    if (waiting.length === 0 && placeFree()) return Promise.resolve(grant());
    return new Promise((resolve) => {
      waiting.push(() => resolve(grant()));
      drain();
    });
  };

  return {
    observe(count) {
      if (!(count > 0)) return;
      const slice = Math.floor(now() / BUCKET_MS);
      buckets.set(slice, (buckets.get(slice) ?? 0) + count);
    },
    busy,
    admit,
    async run(job) {
      const place: { release: (() => void) | undefined } = { release: await admit() };
      try {
        return await places.run(place, job);
      } finally {
        place.release?.();
        place.release = undefined;
      }
    },
    async outside(wait) {
      const place = places.getStore();
      if (!place?.release) return wait();
      place.release();
      place.release = undefined;
      try {
        return await wait();
      } finally {
        place.release = await admit();
      }
    },
    stats: () => ({ running, waiting: waiting.length }),
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      drain();
    },
  };
}
