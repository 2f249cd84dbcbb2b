// Fault injection settings of the sandbox: lost, duplicated, late and reordered webhooks; API errors and slowness.

export interface SandboxFaults {
  /** Share of webhook events never sent (0..1). */
  webhookDrop: number;
  /** Share of webhook events sent 2 or 3 times (0..1). */
  webhookDuplicate: number;
  /** Every webhook event is first sent this long after it happened. */
  webhookDelayMs: number;
  /** Share of webhook events held back until a later event has been delivered (0..1). */
  webhookReorder: number;
  /** A held event is released after this long even if no later event came. */
  webhookReorderMaxHoldMs: number;
  /** Share of API requests answered 503 `unavailable` or 429 `rate_limited` without being applied (0..1). */
  apiErrorRate: number;
  /** When set, injected API errors apply only to requests whose "METHOD /path" starts with this. */
  apiErrorOnly: string | null;
  /** `Retry-After` seconds sent with injected errors. */
  retryAfterSeconds: number;
  /** Share of API requests delayed by `apiSlowMs` before they are handled (0..1). */
  apiSlowRate: number;
  apiSlowMs: number;
  /** Share of runs that end `failed` instead of `completed` (0..1). */
  runFailureRate: number;
  /** Share of trainings that end `failed` halfway (0..1). */
  trainingFailureRate: number;
}

export const NO_FAULTS: SandboxFaults = {
  webhookDrop: 0,
  webhookDuplicate: 0,
  webhookDelayMs: 0,
  webhookReorder: 0,
  webhookReorderMaxHoldMs: 5_000,
  apiErrorRate: 0,
  apiErrorOnly: null,
  retryAfterSeconds: 1,
  apiSlowRate: 0,
  apiSlowMs: 0,
  runFailureRate: 0,
  trainingFailureRate: 0,
};

const RATES = [
  'webhookDrop',
  'webhookDuplicate',
  'webhookReorder',
  'apiErrorRate',
  'apiSlowRate',
  'runFailureRate',
  'trainingFailureRate',
] as const;

/** Full fault settings from a partial one: unspecified faults are off; rates must be in 0..1. */
export function resolveFaults(faults: Partial<SandboxFaults> = {}): SandboxFaults {
  const resolved = { ...NO_FAULTS, ...faults };
  for (const key of RATES) {
    const value = resolved[key];
    if (!(value >= 0 && value <= 1)) throw new RangeError(`fault ${key} must be in 0..1, got ${value}`);
  }
  for (const key of ['webhookDelayMs', 'webhookReorderMaxHoldMs', 'apiSlowMs', 'retryAfterSeconds'] as const) {
    if (!(resolved[key] >= 0)) throw new RangeError(`fault ${key} must be >= 0, got ${resolved[key]}`);
  }
  return resolved;
}
