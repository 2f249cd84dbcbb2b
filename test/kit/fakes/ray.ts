// A fake Ray cluster's Jobs REST API over real HTTP that really runs each submitted entrypoint as a local process (as a Ray node does), with fault switches.
//
// Wire shapes from Ray's source (ray-project/ray, python/ray/dashboard/modules/job/: job_head.py routes
// and plain-text errors, job_agent.py / job_manager.py submit and the duplicate submission_id error
// passed on by the head as a 500, job_supervisor.py status messages, common.py JobStatus and the
// default messages, pydantic_models.py JobDetails) and _private/authentication/http_token_authentication.py.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface FakeRayOptions {
  /** Token auth (`RAY_AUTH_MODE=token`): every call needs `Authorization: Bearer <token>`. Unset = none (Ray's default). */
  authToken?: string;
  /** How long a job stays PENDING (runtime env setup, scheduling) before its entrypoint starts. Default 50 ms. */
  pendingMs?: number;
  /** Between SIGTERM and SIGKILL when a job is stopped (Ray's RAY_JOB_STOP_WAIT_TIME_S). Default 1 s. */
  stopWaitMs?: number;
  /** Environment of the entrypoint processes, over this process's. */
  env?: Record<string, string>;
}

/** Fault switches, changeable while the fake runs. */
export interface FakeRayFaults {
  /** The next n API calls answer 429 with Retry-After: `retryAfterSeconds` (a proxy in front of the dashboard). */
  rateLimitNext: number;
  retryAfterSeconds: number;
  /** The next n API calls answer this 5xx. */
  serverErrorNext: number;
  serverErrorStatus: number;
  /** The next n stop calls (`POST /api/jobs/{id}/stop`) answer `serverErrorStatus`, not applied. */
  stopErrorsNext: number;
  /** The next n submissions are accepted, but the answer is lost (a 502 from a proxy). */
  loseSubmitAnswers: number;
  /** Jobs stay PENDING (no node has the resources they ask for) until this is false. */
  holdJobs: boolean;
  /** Jobs are paused (SIGSTOP) at their first progress line, while RUNNING, until {@link FakeRay.resume}. */
  pauseAtProgress: boolean;
  /** Jobs' processes are killed (SIGKILL: a node lost, out of memory) at their first progress line. */
  killAtProgress: boolean;
  /** Jobs are stopped by someone on the dashboard at their first progress line. */
  stopAtProgress: boolean;
}

export interface FakeRayJob {
  submission_id: string;
  job_id: string | null;
  status: 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED';
  entrypoint: string;
  message: string;
  error_type: string | null;
  start_time: number;
  end_time: number | null;
  metadata: Record<string, string>;
  runtime_env: Record<string, unknown>;
  entrypoint_num_cpus: number | null;
  entrypoint_num_gpus: number | null;
  entrypoint_resources: Record<string, number> | null;
  driver_exit_code: number | null;
  logs: string;
  workDir: string;
  process: ChildProcess | null;
  paused: boolean;
  stopping: boolean;
  faulted: boolean;
}

export interface FakeRay {
  /** `http://127.0.0.1:<port>` (RAY_ADDRESS: the dashboard address). */
  address: string;
  faults: FakeRayFaults;
  /** Submissions accepted, duplicates refused, stop calls. */
  counts: { submissions: number; duplicates: number; stops: number };
  /** Every request: method, path, status answered, JSON body. */
  requests: Array<{ method: string; path: string; status: number; body: unknown; authorization: string | undefined }>;
  jobs(): FakeRayJob[];
  /** Continues every paused job (SIGCONT). */
  resume(): void;
  close(): Promise<void>;
}

const SUBMIT_FIELDS = new Set([
  'entrypoint',
  'submission_id',
  'job_id',
  'runtime_env',
  'metadata',
  'entrypoint_num_cpus',
  'entrypoint_num_gpus',
  'entrypoint_memory',
  'entrypoint_resources',
  'entrypoint_label_selector',
]);

/** A Python traceback as Ray's dashboard answers errors (plain text). */
function traceback(where: string, error: string): string {
  return `Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/ray/dashboard/modules/job/${where}", line 1, in submit_job\n${error}\n`;
}

function logLine(message: string): string {
  const now = new Date().toISOString().replace('T', ' ').replace('Z', '').replace('.', ',');
  return `${now}\tINFO job_manager.py:568 -- ${message}\n`;
}

export async function startFakeRay(options: FakeRayOptions = {}): Promise<FakeRay> {
  const pendingMs = options.pendingMs ?? 50;
  const stopWaitMs = options.stopWaitMs ?? 1_000;
  const jobs = new Map<string, FakeRayJob>();
  const timers = new Set<NodeJS.Timeout>();
  let seq = 1;
  let closed = false;
  const faults: FakeRayFaults = {
    rateLimitNext: 0,
    retryAfterSeconds: 1,
    serverErrorNext: 0,
    serverErrorStatus: 503,
    stopErrorsNext: 0,
    loseSubmitAnswers: 0,
    holdJobs: false,
    pauseAtProgress: false,
    killAtProgress: false,
    stopAtProgress: false,
  };
  const counts = { submissions: 0, duplicates: 0, stops: 0 };
  const requests: FakeRay['requests'] = [];

  function later(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!closed) run();
    }, ms);
    timers.add(timer);
  }

  function details(job: FakeRayJob): Record<string, unknown> {
    return {
      type: 'SUBMISSION',
      job_id: job.job_id,
      submission_id: job.submission_id,
      driver_info: null,
      status: job.status,
      entrypoint: job.entrypoint,
      message: job.message,
      error_type: job.error_type,
      start_time: job.start_time,
      end_time: job.end_time,
      metadata: job.metadata,
      runtime_env: job.runtime_env,
      driver_agent_http_address: job.job_id ? 'http://127.0.0.1:52365' : null,
      driver_node_id: job.job_id ? 'f'.repeat(56) : null,
      driver_exit_code: job.driver_exit_code,
    };
  }

  function pendingMessage(job: FakeRayJob): string {
    let message = 'Job has not started yet.';
    if ((job.entrypoint_num_cpus ?? 0) > 0 || (job.entrypoint_num_gpus ?? 0) > 0 || Object.keys(job.entrypoint_resources ?? {}).length > 0) {
      message += ' It may be waiting for resources (CPUs, GPUs, memory, custom resources) to become available.';
    }
    if (Object.keys(job.runtime_env).length > 0) message += ' It may be waiting for the runtime environment to be set up.';
    return message;
  }

  function finish(job: FakeRayJob, status: FakeRayJob['status'], message: string, exitCode: number | null, errorType: string | null = null): void {
    job.status = status;
    job.message = message;
    job.driver_exit_code = exitCode;
    job.error_type = errorType;
    job.end_time = Date.now();
    job.process = null;
  }

  function onProgress(job: FakeRayJob): void {
    if (job.faulted || !job.process?.pid) return;
    const pid = job.process.pid;
    if (faults.killAtProgress) {
      job.faulted = true;
      process.kill(-pid, 'SIGKILL');
    } else if (faults.stopAtProgress) {
      job.faulted = true;
      stopJob(job);
    } else if (faults.pauseAtProgress) {
      job.faulted = true;
      job.paused = true;
      process.kill(-pid, 'SIGSTOP');
    }
  }

  /** Runs the entrypoint in a shell in its own process group, its stdout and stderr as the driver log. */
  function run(job: FakeRayJob): void {
    if (job.status !== 'PENDING') return;
    if (faults.holdJobs) {
      later(50, () => run(job));
      return;
    }
    job.status = 'RUNNING';
    job.message = 'Job is currently running.';
    job.job_id = `${String(seq++).padStart(2, '0')}000000`;
    job.logs += `Running entrypoint for job ${job.submission_id}: ${job.entrypoint}\n`;
    const envVars = ((job.runtime_env.env_vars ?? {}) as Record<string, string>) ?? {};
    const child = spawn('/bin/sh', ['-c', job.entrypoint], {
      cwd: job.workDir,
      env: { ...process.env, ...options.env, ...envVars, RAY_ADDRESS: '127.0.0.1:6379', PYTHONUNBUFFERED: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    job.process = child;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      job.logs += `${line}\n`;
      if (line.startsWith('{"type": "progress"') || line.startsWith('{"type":"progress"')) onProgress(job);
    });
    createInterface({ input: child.stderr! }).on('line', (line) => {
      job.logs += `${line}\n`;
    });
    child.on('error', (error) => {
      finish(job, 'FAILED', `Failed to start the entrypoint: ${error.message}`, null, 'JOB_ENTRYPOINT_COMMAND_START_ERROR');
    });
    child.on('close', (code, signal) => {
      if (job.status !== 'RUNNING') return;
      if (job.stopping) return finish(job, 'STOPPED', 'Job was intentionally stopped.', null);
      // Python's Popen.returncode: the exit code, or minus the signal that ended the process.
      const returnCode = code ?? -(os.constants.signals[signal as keyof typeof os.constants.signals] ?? 1);
      if (returnCode === 0) return finish(job, 'SUCCEEDED', 'Job finished successfully.', 0);
      const tail = job.logs.slice(-20_000);
      finish(
        job,
        'FAILED',
        tail.trim()
          ? `Job entrypoint command failed with exit code ${returnCode}, last available logs (truncated to 20,000 chars):\n${tail}`
          : `Job entrypoint command failed with exit code ${returnCode}. No logs available.`,
        returnCode,
        'JOB_ENTRYPOINT_COMMAND_ERROR',
      );
    });
  }

  /** Ray's JobManager.stop_job: true when the job was still alive. */
  function stopJob(job: FakeRayJob): boolean {
    if (job.status === 'PENDING') {
      finish(job, 'STOPPED', 'Job was intentionally stopped.', null);
      return true;
    }
    if (job.status !== 'RUNNING' || !job.process?.pid) return false;
    job.stopping = true;
    const pid = job.process.pid;
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(-pid, name);
      } catch {
        // already gone
      }
    };
    signal('SIGTERM');
    if (job.paused) signal('SIGCONT');
    later(stopWaitMs, () => {
      if (job.process) signal('SIGKILL');
    });
    return true;
  }

  function submit(body: unknown): { status: number; text: string } {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return { status: 400, text: traceback('utils.py', "TypeError: JobSubmitRequest() argument after ** must be a mapping") };
    }
    const request = body as Record<string, unknown>;
    const unknown = Object.keys(request).filter((key) => !SUBMIT_FIELDS.has(key) && request[key] !== null);
    if (unknown.length > 0) {
      return { status: 400, text: traceback('utils.py', `TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument '${unknown[0]}'`) };
    }
    if (typeof request.entrypoint !== 'string') {
      return { status: 400, text: traceback('common.py', `TypeError: entrypoint must be a string, got ${typeof request.entrypoint}`) };
    }
    for (const key of ['entrypoint_num_cpus', 'entrypoint_num_gpus']) {
      if (request[key] != null && typeof request[key] !== 'number') {
        return { status: 400, text: traceback('common.py', `TypeError: ${key} must be a number, got ${typeof request[key]}`) };
      }
    }
    const id = typeof request.submission_id === 'string' ? request.submission_id : `raysubmit_${Math.random().toString(36).slice(2, 18)}`;
    if (jobs.has(id)) {
      counts.duplicates += 1;
      // The agent's ValueError reaches the client through the head as a RuntimeError: a 500.
      return {
        status: 500,
        text: traceback(
          'job_head.py',
          `RuntimeError: Request failed with status code 400: ${traceback(
            'job_agent.py',
            `ValueError: Job with submission_id ${id} already exists. Please use a different submission_id.`,
          )}.`,
        ),
      };
    }
    counts.submissions += 1;
    const job: FakeRayJob = {
      submission_id: id,
      job_id: null,
      status: 'PENDING',
      entrypoint: request.entrypoint,
      message: '',
      error_type: null,
      start_time: Date.now(),
      end_time: null,
      metadata: (request.metadata as Record<string, string>) ?? {},
      runtime_env: (request.runtime_env as Record<string, unknown>) ?? {},
      entrypoint_num_cpus: (request.entrypoint_num_cpus as number) ?? null,
      entrypoint_num_gpus: (request.entrypoint_num_gpus as number) ?? null,
      entrypoint_resources: (request.entrypoint_resources as Record<string, number>) ?? null,
      driver_exit_code: null,
      logs: logLine('Runtime env is setting up.'),
      workDir: '',
      process: null,
      paused: false,
      stopping: false,
      faulted: false,
    };
    job.message = pendingMessage(job);
    jobs.set(id, job);
    void mkdtemp(path.join(os.tmpdir(), 'fake-ray-job-')).then((dir) => {
      job.workDir = dir;
      later(pendingMs, () => run(job));
    });
    return { status: 200, text: JSON.stringify({ job_id: id, submission_id: id }) };
  }

  function route(method: string, url: string, body: unknown): { status: number; text: string; json?: boolean } {
    if (method === 'GET' && url === '/api/version') {
      return { status: 200, json: true, text: JSON.stringify({ version: '4', ray_version: '2.40.0', ray_commit: 'fake', session_name: 'session_fake' }) };
    }
    if (url === '/api/jobs/') {
      if (method === 'POST') {
        const answer = submit(body);
        return { ...answer, json: answer.status === 200 };
      }
      if (method === 'GET') return { status: 200, json: true, text: JSON.stringify([...jobs.values()].map(details)) };
    }
    const match = /^\/api\/jobs\/([^/]+)(\/logs|\/stop)?$/.exec(url);
    if (match) {
      const id = decodeURIComponent(match[1]!);
      const job = jobs.get(id);
      if (!job) return { status: 404, text: `Job ${id} does not exist` };
      if (method === 'GET' && !match[2]) return { status: 200, json: true, text: JSON.stringify(details(job)) };
      if (method === 'GET' && match[2] === '/logs') return { status: 200, json: true, text: JSON.stringify({ logs: job.logs }) };
      if (method === 'POST' && match[2] === '/stop') {
        counts.stops += 1;
        return { status: 200, json: true, text: JSON.stringify({ stopped: stopJob(job) }) };
      }
      if (method === 'DELETE' && !match[2]) {
        if (job.status === 'PENDING' || job.status === 'RUNNING') {
          return {
            status: 500,
            text: traceback('job_head.py', `RuntimeError: Attempted to delete job '${id}', but it is in a non-terminal state ${job.status}.`),
          };
        }
        jobs.delete(id);
        return { status: 200, json: true, text: JSON.stringify({ deleted: true }) };
      }
    }
    return { status: 404, text: '404: Not Found' };
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = undefined;
      if (raw) {
        try {
          body = JSON.parse(raw);
        } catch {
          body = raw;
        }
      }
      const method = req.method ?? 'GET';
      const url = (req.url ?? '/').split('?')[0]!;
      const authorization = req.headers.authorization;
      const send = (status: number, text: string, json = false, headers: Record<string, string> = {}) => {
        requests.push({ method, path: url, status, body, authorization });
        res.writeHead(status, { 'content-type': json ? 'application/json' : 'text/plain; charset=utf-8', ...headers });
        res.end(text);
      };
      if (options.authToken) {
        if (!authorization) return send(401, 'Unauthorized: Missing authentication token');
        if (authorization !== `Bearer ${options.authToken}`) return send(403, 'Forbidden: Invalid authentication token');
      }
      if (faults.rateLimitNext > 0) {
        faults.rateLimitNext -= 1;
        return send(429, 'Too Many Requests', false, { 'retry-after': String(faults.retryAfterSeconds) });
      }
      if (faults.serverErrorNext > 0) {
        faults.serverErrorNext -= 1;
        return send(faults.serverErrorStatus, traceback('job_head.py', 'RuntimeError: No available agent to submit job, please try again later.'));
      }
      if (method === 'POST' && url.endsWith('/stop') && faults.stopErrorsNext > 0) {
        faults.stopErrorsNext -= 1;
        return send(faults.serverErrorStatus, traceback('job_head.py', 'RuntimeError: No available agent to stop job, please try again later.'));
      }
      const answer = route(method, url, body);
      if (method === 'POST' && url === '/api/jobs/' && answer.status === 200 && faults.loseSubmitAnswers > 0) {
        faults.loseSubmitAnswers -= 1;
        return send(502, 'Bad Gateway');
      }
      send(answer.status, answer.text, answer.json ?? false);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    address: `http://127.0.0.1:${port}`,
    faults,
    counts,
    requests,
    jobs: () => [...jobs.values()],
    resume() {
      for (const job of jobs.values()) {
        if (job.paused && job.process?.pid) {
          job.paused = false;
          process.kill(-job.process.pid, 'SIGCONT');
        }
      }
    },
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      for (const job of jobs.values()) {
        if (job.process?.pid) {
          try {
            process.kill(-job.process.pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([...jobs.values()].filter((j) => j.workDir).map((j) => rm(j.workDir, { recursive: true, force: true })));
    },
  };
}
