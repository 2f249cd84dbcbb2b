// Typed failures of platform calls: the API's stable error codes plus what can go wrong on the way.
import { API_ERROR_CODES, type ApiErrorCode } from './contract.js';

export type PlatformErrorCode = ApiErrorCode | 'invalid_response' | 'timeout' | 'network';

const RETRYABLE: ReadonlySet<PlatformErrorCode> = new Set(['rate_limited', 'unavailable', 'timeout', 'network']);

export class PlatformError extends Error {
  override readonly name = 'PlatformError';
  readonly code: PlatformErrorCode;
  /** HTTP status of the response, or null when there was none (timeout, network). */
  readonly status: number | null;
  /** Server-requested wait from a `Retry-After` header, when present. */
  readonly retryAfterMs: number | null;

  constructor(
    code: PlatformErrorCode,
    message: string,
    options: { status?: number | null; retryAfterMs?: number | null; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status ?? null;
    this.retryAfterMs = options.retryAfterMs ?? null;
  }

  /** Whether the same request may succeed later (transient: rate limit, outage, timeout, network). */
  get retryable(): boolean {
    return RETRYABLE.has(this.code);
  }
}

export function isPlatformError(error: unknown): error is PlatformError {
  return error instanceof PlatformError;
}

export function isApiErrorCode(code: string): code is ApiErrorCode {
  return (API_ERROR_CODES as readonly string[]).includes(code);
}

/** The code implied by an HTTP status when the body does not carry a known one. */
export function codeForStatus(status: number): PlatformErrorCode {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 402) return 'insufficient_credits';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  if (status >= 400) return 'invalid_request';
  return 'invalid_response';
}
