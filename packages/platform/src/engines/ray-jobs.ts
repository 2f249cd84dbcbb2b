// A client of Ray's Jobs REST API (the dashboard's /api/jobs/ routes): submit once, look up, read logs, stop.
//
// Shapes from Ray's own source and docs (ray-project/ray): python/ray/dashboard/modules/job/job_head.py
// (routes; errors are plain text, a traceback for 400/500, "Job <id> does not exist" for 404),
// job_agent.py and job_manager.py (submit answers {"job_id", "submission_id"}; a submission id already
// used is a ValueError "Job with submission_id <id> already exists. Please use a different
// submission_id.", which the head passes on as a 500), pydantic_models.py (JobDetails: status,
// message, error_type, driver_exit_code, metadata, ...), common.py (JobStatus PENDING, RUNNING,
// STOPPED, SUCCEEDED, FAILED; JobLogsResponse {"logs"}, JobStopResponse {"stopped"}), the REST page
// (docs.ray.io .../job-submission/rest.html) and _private/authentication/http_token_authentication.py
// (token auth: 401 "Unauthorized: Missing authentication token", 403 "Forbidden: Invalid authentication token").
import { parseRetryAfter } from '@verdict/contract/http-client';
import { sleep } from '../sleep.js';
import type { TrainerLogger } from './pytorch-trainer.js';

/** `POST /api/jobs/` body (JobSubmitRequest). */
export interface RayJobSubmitRequest {
  entrypoint: string;
  submission_id: string;
  runtime_env?: { env_vars?: Record<string, string>; working_dir?: string };
  metadata?: Record<string, string>;
  entrypoint_num_cpus?: number;
  entrypoint_num_gpus?: number;
  entrypoint_resources?: Record<string, number>;
}

export type RayJobStatus = 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED';

/** `GET /api/jobs/{submission_id}` (JobDetails; the fields read here). */
export interface RayJobDetails {
  type?: string;
  job_id?: string | null;
  submission_id?: string | null;
  status: RayJobStatus | string;
  entrypoint?: string;
  message?: string | null;
  error_type?: string | null;
  start_time?: number | null;
  end_time?: number | null;
  metadata?: Record<string, string> | null;
  driver_exit_code?: number | null;
}

export const RAY_TERMINAL = new Set(['STOPPED', 'SUCCEEDED', 'FAILED']);

/** An answer of the Ray cluster, in the user's words ("Ray says: ..."); `status` null = not reached. */
export class RayError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'RayError';
  }
}

export interface RayJobsClientOptions {
  /** The dashboard's HTTP address, e.g. `http://ray-head:8265`. */
  address: string;
  /** Sent with every call (an `Authorization` header for token auth or a proxy). */
  headers?: Record<string, string>;
  /** Attempts of one call on 429, 5xx and network errors. Default 5. */
  attempts?: number;
  /** Base of the retry backoff when no Retry-After is given. Default 500 ms. */
  retryBaseMs?: number;
  /** Per call. Default 30 s. */
  timeoutMs?: number;
  logger?: TrainerLogger;
}

export interface RayJobsClient {
  readonly base: string;
  /** The job of this submission id, or null when the cluster has none. */
  get(submissionId: string, signal?: AbortSignal): Promise<RayJobDetails | null>;
  /** The job's whole driver log so far. */
  logs(submissionId: string, signal?: AbortSignal): Promise<string>;
  /**
   * Submits once. After any uncertain attempt (429, 5xx, no answer) the job is looked up before
   * submitting again, so a job is never submitted twice. `existed`: the cluster already had it.
   */
  submit(request: RayJobSubmitRequest): Promise<{ existed: boolean }>;
  /** Asks the cluster to stop the job; whether it was running. */
  stop(submissionId: string): Promise<boolean>;
  /**
   * `GET /api/version` once, within `timeoutMs` (default 5 s): the cluster's Ray version. Throws a
   * RayError with status null when the dashboard does not answer as Ray does, with its status when it refuses.
   */
  version(timeoutMs?: number): Promise<{ rayVersion: string }>;
}

/**
 * What Ray said, in a line: a JSON body's `detail`/`message`/`error`, else the last exception line of a
 * Python traceback without its class name, else the text's first line.
 */
export function rayMessage(status: number, text: string): string {
  const trimmed = text.trim();
  try {
    const body = JSON.parse(trimmed) as { detail?: unknown; message?: unknown; error?: unknown };
    for (const value of [body.detail, body.message, body.error]) {
      if (typeof value === 'string' && value.trim()) return value.trim().slice(0, 300);
    }
  } catch {
    // plain text, as Ray answers
  }
  const lines = trimmed.split('\n').map((line) => line.trim());
  const exception = lines.filter((line) => /^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt):\s/.test(line)).at(-1);
  if (exception) {
    const message = exception.replace(/^[\w.]+:\s*/, '').replace(/^Request failed with status code \d+:\s*/, '');
    if (message && !/^Traceback/.test(message)) return message.slice(0, 300);
  }
  return (lines.find((line) => line !== '') ?? `HTTP ${status}`).slice(0, 300);
}

export function createRayJobsClient(options: RayJobsClientOptions): RayJobsClient {
  const base = options.address.replace(/\/+$/, '');
  const attempts = Math.max(1, options.attempts ?? 5);
  const retryBaseMs = options.retryBaseMs ?? 500;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const logger = options.logger;
  const headers = options.headers ?? {};

  /** One HTTP exchange: the status and body, or a RayError with status null when Ray was not reached. */
  async function exchange(
    method: string,
    route: string,
    body: unknown,
    signal?: AbortSignal,
  ): Promise<{ status: number; text: string; retryAfter: number | null }> {
    try {
      const response = await fetch(`${base}${route}`, {
        method,
        headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
      });
      return { status: response.status, text: await response.text(), retryAfter: parseRetryAfter(response.headers.get('retry-after') ?? undefined) };
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new RayError(
        `the Ray cluster's Jobs API at ${base} could not be reached: ${error instanceof Error ? error.message : String(error)}`,
        null,
      );
    }
  }

  function refusal(status: number, text: string): RayError {
    const hint = status === 401 || status === 403 ? ' (check RAY_AUTH_TOKEN or RAY_JOB_HEADERS)' : '';
    return new RayError(`Ray says: ${rayMessage(status, text)}${hint}`, status);
  }

  const retryable = (status: number) => status === 429 || status >= 500;

  /** An idempotent call (a read, a stop), retried on 429, 5xx and network errors. 404 resolves null. */
  async function call<T>(method: string, route: string, signal?: AbortSignal): Promise<T | null> {
    let last: RayError | null = null;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let wait = retryBaseMs * 2 ** (attempt - 1);
      try {
        const answer = await exchange(method, route, undefined, signal);
        if (answer.status >= 200 && answer.status < 300) return (answer.text ? JSON.parse(answer.text) : {}) as T;
        if (answer.status === 404) return null;
        if (!retryable(answer.status)) throw refusal(answer.status, answer.text);
        last = new RayError(`Ray says: ${rayMessage(answer.status, answer.text)} (HTTP ${answer.status})`, null);
        wait = answer.retryAfter ?? wait;
      } catch (error) {
        if (!(error instanceof RayError) || error.status !== null) throw error;
        last = error;
      }
      if (attempt < attempts) {
        logger?.warn({ route, attempt, waitMs: wait, error: last.message }, 'Ray Jobs API call failed; retrying');
        await sleep(wait, signal);
        if (signal?.aborted) throw last;
      }
    }
    throw last!;
  }

  const jobRoute = (id: string) => `/api/jobs/${encodeURIComponent(id)}`;

  return {
    base,
    get: (id, signal) => call<RayJobDetails>('GET', jobRoute(id), signal),
    async logs(id, signal) {
      const answer = await call<{ logs?: string }>('GET', `${jobRoute(id)}/logs`, signal);
      return answer?.logs ?? '';
    },
    async stop(id) {
      const answer = await call<{ stopped?: boolean }>('POST', `${jobRoute(id)}/stop`);
      return answer?.stopped === true;
    },
    async version(versionTimeoutMs = 5_000) {
      let answer: { status: number; text: string };
      try {
        answer = await exchange('GET', '/api/version', undefined, AbortSignal.timeout(versionTimeoutMs));
      } catch (error) {
        if (error instanceof RayError) throw error;
        throw new RayError(`the Ray cluster's dashboard at ${base} did not answer within ${Math.round(versionTimeoutMs / 1000)} s`, null);
      }
      if (answer.status === 401 || answer.status === 403) throw refusal(answer.status, answer.text);
      let body: { ray_version?: unknown } | null = null;
      try {
        body = JSON.parse(answer.text) as { ray_version?: unknown };
      } catch {
        // not Ray's answer
      }
      if (answer.status !== 200 || typeof body?.ray_version !== 'string') {
        const what = answer.status === 200 ? 'an answer without ray_version' : `HTTP ${answer.status}: ${rayMessage(answer.status, answer.text)}`;
        throw new RayError(`${base} is not answering as a Ray dashboard (GET /api/version: ${what})`, null);
      }
      return { rayVersion: body.ray_version };
    },
    async submit(request) {
      let last: RayError | null = null;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        let wait = retryBaseMs * 2 ** (attempt - 1);
        if (attempt > 1) {
          // The last attempt may have reached Ray: look before submitting again.
          if (await call<RayJobDetails>('GET', jobRoute(request.submission_id))) return { existed: true };
        }
        try {
          // The trailing slash is part of the route (Ray's REST docs: "Don't forget the trailing slash!").
          const answer = await exchange('POST', '/api/jobs/', request);
          if (answer.status >= 200 && answer.status < 300) return { existed: false };
          if (/already exists/i.test(answer.text) && (await call<RayJobDetails>('GET', jobRoute(request.submission_id)))) {
            return { existed: true };
          }
          if (!retryable(answer.status)) throw refusal(answer.status, answer.text);
          last = new RayError(`Ray says: ${rayMessage(answer.status, answer.text)} (HTTP ${answer.status})`, null);
          wait = answer.retryAfter ?? wait;
        } catch (error) {
          if (!(error instanceof RayError) || error.status !== null) throw error;
          last = error;
        }
        if (attempt < attempts) {
          logger?.warn({ submissionId: request.submission_id, attempt, waitMs: wait, error: last.message }, 'Ray job submission failed; looking it up, then retrying');
          await sleep(wait);
        }
      }
      if (await call<RayJobDetails>('GET', jobRoute(request.submission_id)).catch(() => null)) return { existed: true };
      throw last!;
    },
  };
}

/** Ray's FAILED message in a line: its first sentence and the log's last line (the error). */
export function failureSummary(job: RayJobDetails): string {
  const message = (job.message ?? '').trim();
  if (!message) return `the job failed${job.driver_exit_code != null ? ` with exit code ${job.driver_exit_code}` : ''}`;
  const [first = '', ...rest] = message.split('\n');
  const head = first.replace(/,? last available logs.*$/i, '').replace(/\.\s*No logs available\.?$/i, '').replace(/\.$/, '');
  const tail = rest
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('{'))
    .at(-1);
  let summary = tail ? `${head}: ${tail.slice(0, 300)}` : head;
  if (/No module named '(torch|numpy)'/.test(message)) {
    summary += " (install PyTorch and numpy for the cluster nodes' python, or set RAY_PYTHON to one that has them)";
  }
  return summary;
}
