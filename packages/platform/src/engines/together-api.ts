// Together's HTTP API as the trainer calls it: JSON or form bodies, retries on 429, 5xx and network errors (Retry-After honoured), its errors in the user's words.
import { parseRetryAfter } from '@verdict/contract/http-client';
import { sleep } from '../sleep.js';
import type { TrainerLogger } from './pytorch-trainer.js';

/** An error Together answered, in the user's words. */
export class TogetherError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'TogetherError';
  }
}

/** Together's error message from a response body (`{error: {message}}`, `{message}` or text). */
function errorMessage(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
    const message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    if (message) return message;
  } catch {
    // not JSON
  }
  return text.trim().slice(0, 300) || `HTTP ${status}`;
}

export interface TogetherCallOptions {
  /** Together's API base including `/v1`, without a trailing slash. */
  base: string;
  apiKey: string;
  /** Attempts of one call on 429, 5xx and network errors. */
  attempts: number;
  /** Base of the retry backoff when no Retry-After is given. */
  retryBaseMs: number;
  /** Per call. */
  timeoutMs: number;
  logger?: TrainerLogger;
}

/** One call to Together: its JSON answer, or a {@link TogetherError} (a 4xx at once, anything else once the attempts are spent). */
export function createTogetherCall(options: TogetherCallOptions) {
  const { base, apiKey, attempts, retryBaseMs, timeoutMs, logger } = options;
  return async function call<T>(method: string, route: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let last = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let wait = retryBaseMs * 2 ** (attempt - 1);
      try {
        const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, accept: 'application/json' };
        let payload: FormData | string | undefined;
        if (body instanceof FormData) payload = body;
        else if (body !== undefined) {
          headers['content-type'] = 'application/json';
          payload = JSON.stringify(body);
        }
        const response = await fetch(`${base}${route}`, {
          method,
          headers,
          ...(payload !== undefined ? { body: payload } : {}),
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
        });
        const text = await response.text();
        if (response.ok) return (text ? JSON.parse(text) : {}) as T;
        const message = errorMessage(response.status, text);
        if (response.status !== 429 && response.status < 500) {
          throw new TogetherError(`Together says: ${message}`, response.status);
        }
        last = `Together says: ${message} (HTTP ${response.status})`;
        wait = parseRetryAfter(response.headers.get('retry-after') ?? undefined) ?? wait;
      } catch (error) {
        if (error instanceof TogetherError) throw error;
        if (signal?.aborted) throw error;
        last = `Together could not be reached at ${base}: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (attempt < attempts) {
        logger?.warn({ route, attempt, waitMs: wait, error: last }, 'Together call failed; retrying');
        await sleep(wait, signal);
      }
    }
    throw new TogetherError(last, null);
  };
}
