// Group commit: concurrent callers share one statement (and one commit) instead of queueing for their own.

export interface GroupCommitOptions<I, O> {
  /** Most items in one flush. */
  maxBatch: number;
  /** Most flushes running at once (each holds one database connection). */
  maxInFlight: number;
  /** Writes the items; returns one result per item, in order. A rejection fails every item of the batch. */
  flush(items: I[]): Promise<O[]>;
}

export interface GroupCommit<I, O> {
  submit(item: I): Promise<O>;
}

/**
 * Items are flushed as soon as a flush slot is free, so a lone item never waits for a timer; items
 * that arrive while every slot is busy wait together and go in the next flush. Under load the batch
 * size grows by itself, and the number of commits per second stays bounded by the slots.
 */
export function createGroupCommit<I, O>(options: GroupCommitOptions<I, O>): GroupCommit<I, O> {
  if (options.maxBatch < 1 || options.maxInFlight < 1) throw new Error('maxBatch and maxInFlight must be at least 1');
  const waiting: { item: I; resolve(result: O): void; reject(error: unknown): void }[] = [];
  let inFlight = 0;

  const pump = (): void => {
    while (inFlight < options.maxInFlight && waiting.length > 0) {
      const batch = waiting.splice(0, options.maxBatch);
      inFlight += 1;
      void Promise.resolve()
        .then(() => options.flush(batch.map((entry) => entry.item)))
        .then(
          (results) => {
            if (results.length !== batch.length) throw new Error(`flush returned ${results.length} results for ${batch.length} items`);
            batch.forEach((entry, i) => entry.resolve(results[i]!));
          },
        )
        .catch((error: unknown) => batch.forEach((entry) => entry.reject(error)))
        .finally(() => {
          inFlight -= 1;
          pump();
        });
    }
  };

  return {
    submit: (item) =>
      new Promise<O>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        pump();
      }),
  };
}
