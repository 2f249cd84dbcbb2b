// A fake of Together's API over real HTTP: files, fine-tunes (estimate, create, list, retrieve, events, cancel) and OpenAI-compatible inference, with fault switches.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeTogetherOptions {
  apiKey?: string;
  /** Base models Together serves and fine-tunes. */
  models?: string[];
  /** The base models' answer to a prompt (chat: the user message). Default: "I do not know". */
  answer?: (model: string, prompt: string) => string;
  /** US dollars per 1,000 trained tokens. Default 0.5. */
  dollarsPer1kTokens?: number;
  /** Account balance plus credit limit in dollars. Default 100. */
  balance?: number;
  /** Status polls a job spends running before it completes. Default 3. */
  runningPolls?: number;
}

interface StoredFile {
  id: string;
  filename: string;
  purpose: string;
  bytes: number;
  content: string;
}

interface Job {
  id: string;
  status: string;
  model: string;
  suffix: string | null;
  training_file: string;
  n_epochs: number;
  learning_rate: number | null;
  training_type: unknown;
  output_name: string;
  polls: number;
  total_steps: number;
  steps_completed: number;
  events: Array<{ object: 'fine-tune-event'; created_at: string; level: string; message: string; type: string }>;
  /** prompt -> completion the fine-tuned model learnt. */
  learnt: Map<string, string>;
  fate: 'complete' | 'fail' | 'cancel';
}

/** Fault switches, changeable while the fake runs. */
export interface FakeTogetherFaults {
  /** The next n API calls answer 429 with Retry-After: `retryAfterSeconds`. */
  rateLimitNext: number;
  retryAfterSeconds: number;
  /** The next n API calls answer this 5xx. */
  serverErrorNext: number;
  serverErrorStatus: number;
  /** The next n fine-tune cancels (`POST /fine-tunes/{id}/cancel`) answer `serverErrorStatus`, not applied. */
  cancelErrorsNext: number;
  /** Jobs created from now on fail on Together's side (an error event, status error). */
  failJobs: boolean;
  /** Jobs created from now on are cancelled on Together's side. */
  cancelJobs: boolean;
  /** Jobs stay running until this is false. */
  holdJobs: boolean;
}

export interface FakeTogether {
  /** `http://127.0.0.1:<port>/v1` (TOGETHER_API_URL). */
  apiUrl: string;
  /** `http://127.0.0.1:<port>` (INFERENCE_URL: the client appends /v1/...). */
  root: string;
  apiKey: string;
  faults: FakeTogetherFaults;
  /** Fine-tune creations, uploads and estimates received (after faults). */
  counts: { creations: number; uploads: number; estimates: number; cancels: number; chat: number };
  /** Every request: method, path, status answered. */
  requests: Array<{ method: string; path: string; status: number; body: unknown }>;
  jobs(): Job[];
  files(): StoredFile[];
  setBalance(dollars: number): void;
  close(): Promise<void>;
}

function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(Buffer.byteLength(text) / 4));
}

/** The prompt of one uploaded line: Together's conversational (`messages`) or instruction (`prompt`) format. */
function lineExample(line: string): { prompt: string; completion: string } | null {
  const value = JSON.parse(line) as {
    messages?: Array<{ role: string; content: string }>;
    prompt?: string;
    completion?: string;
  };
  if (value.messages) {
    const user = value.messages.find((m) => m.role === 'user');
    const assistant = value.messages.find((m) => m.role === 'assistant');
    return user && assistant ? { prompt: user.content, completion: assistant.content } : null;
  }
  if (typeof value.prompt === 'string' && typeof value.completion === 'string') return { prompt: value.prompt, completion: value.completion };
  return null;
}

export async function startFakeTogether(options: FakeTogetherOptions = {}): Promise<FakeTogether> {
  const apiKey = options.apiKey ?? 'together-test-key';
  const models = options.models ?? ['meta-llama/Llama-3.2-1B-Instruct'];
  const answer = options.answer ?? (() => 'I do not know');
  const rate = options.dollarsPer1kTokens ?? 0.5;
  const runningPolls = options.runningPolls ?? 3;
  let balance = options.balance ?? 100;
  const files = new Map<string, StoredFile>();
  const jobs = new Map<string, Job>();
  const outputs = new Map<string, Job>();
  let seq = 0;
  const faults: FakeTogetherFaults = {
    rateLimitNext: 0,
    retryAfterSeconds: 1,
    serverErrorNext: 0,
    serverErrorStatus: 503,
    cancelErrorsNext: 0,
    failJobs: false,
    cancelJobs: false,
    holdJobs: false,
  };
  const counts = { creations: 0, uploads: 0, estimates: 0, cancels: 0, chat: 0 };
  const requests: FakeTogether['requests'] = [];
  const now = () => new Date().toISOString();
  const event = (job: Job, type: string, message: string, level = 'info') =>
    job.events.push({ object: 'fine-tune-event', created_at: now(), level, message, type });

  function priceOf(file: StoredFile, epochs: number): { tokens: number; dollars: number } {
    const tokens = estimateTokens(file.content) * epochs;
    return { tokens, dollars: Math.round((tokens / 1000) * rate * 10_000) / 10_000 };
  }

  function wire(job: Job): Record<string, unknown> {
    return {
      id: job.id,
      status: job.status,
      model: job.model,
      suffix: job.suffix,
      training_file: job.training_file,
      n_epochs: job.n_epochs,
      learning_rate: job.learning_rate,
      training_type: job.training_type,
      output_name: job.output_name,
      total_steps: job.total_steps,
      steps_completed: job.steps_completed,
      epochs_completed: Math.floor((job.steps_completed / job.total_steps) * job.n_epochs),
      created_at: now(),
      updated_at: now(),
    };
  }

  /** One status read moves a job on: pending, queued, running (a step a poll), then its fate. */
  function advance(job: Job): void {
    if (['completed', 'error', 'cancelled'].includes(job.status)) return;
    job.polls += 1;
    if (job.status === 'cancel_requested') {
      job.status = 'cancelled';
      event(job, 'job_cancelled', 'Job cancelled');
      return;
    }
    if (job.polls === 1) {
      job.status = 'queued';
      return;
    }
    if (job.status === 'queued') {
      job.status = 'running';
      event(job, 'job_start', 'Training started');
      return;
    }
    if (faults.holdJobs) return;
    if (job.fate === 'fail') {
      job.status = 'error';
      event(job, 'job_error', 'CUDA out of memory: the batch does not fit on the GPU', 'error');
      return;
    }
    if (job.fate === 'cancel') {
      job.status = 'cancelled';
      event(job, 'job_cancelled', 'Job cancelled by Together: insufficient balance', 'warning');
      return;
    }
    job.steps_completed = Math.min(job.total_steps, job.steps_completed + Math.ceil(job.total_steps / runningPolls));
    event(job, 'epoch_complete', `Step ${job.steps_completed}/${job.total_steps}, loss ${(1 / job.steps_completed).toFixed(4)}`);
    if (job.steps_completed >= job.total_steps) {
      job.status = 'completed';
      event(job, 'job_complete', `Model uploaded as ${job.output_name}`);
    }
  }

  function completionFor(model: string, prompt: string): string | null {
    const job = outputs.get(model);
    if (job) return job.status === 'completed' ? (job.learnt.get(prompt) ?? answer(job.model, prompt)) : null;
    return models.includes(model) ? answer(model, prompt) : null;
  }

  async function handle(request: http.IncomingMessage, body: Buffer): Promise<[number, unknown, Record<string, string>?]> {
    const url = new URL(request.url ?? '/', 'http://fake');
    const route = `${request.method} ${url.pathname}`;
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      return [401, { error: { message: 'Invalid API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }];
    }
    if (faults.rateLimitNext > 0) {
      faults.rateLimitNext -= 1;
      return [429, { error: { message: 'Rate limit exceeded', type: 'rate_limit' } }, { 'retry-after': String(faults.retryAfterSeconds) }];
    }
    if (faults.serverErrorNext > 0) {
      faults.serverErrorNext -= 1;
      return [faults.serverErrorStatus, { error: { message: 'The server is overloaded', type: 'server_error' } }];
    }
    if (request.method === 'POST' && url.pathname.endsWith('/cancel') && faults.cancelErrorsNext > 0) {
      faults.cancelErrorsNext -= 1;
      return [faults.serverErrorStatus, { error: { message: 'The server is overloaded', type: 'server_error' } }];
    }
    const json = () => JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>;

    if (route === 'GET /v1/models') {
      return [200, models.map((id) => ({ id, object: 'model', type: 'chat', display_name: id, organization: 'Meta', context_length: 8192 }))];
    }
    if (route === 'POST /v1/chat/completions' || route === 'POST /v1/completions') {
      counts.chat += 1;
      const input = json();
      const model = String(input.model);
      const messages = input.messages as Array<{ role: string; content: string }> | undefined;
      const prompt = messages ? (messages.find((m) => m.role === 'user')?.content ?? '') : String(input.prompt ?? '');
      const output = completionFor(model, prompt);
      if (output === null) {
        return [404, { error: { message: `Unable to access model ${model}. Please visit https://api.together.ai/models to view the list of supported models.`, type: 'invalid_request_error', code: 'model_not_available' } }];
      }
      const usage = { prompt_tokens: estimateTokens(prompt), completion_tokens: estimateTokens(output), total_tokens: estimateTokens(prompt) + estimateTokens(output) };
      const choice = messages
        ? { index: 0, message: { role: 'assistant', content: output }, finish_reason: 'stop' }
        : { index: 0, text: output, finish_reason: 'stop' };
      return [200, { id: `chat-${++seq}`, object: messages ? 'chat.completion' : 'text_completion', created: Math.floor(Date.now() / 1000), model, choices: [choice], usage }];
    }
    if (route === 'GET /v1/fine-tunes/models/supported') {
      return [200, { models, detailed_models: models.map((name) => ({ name, lora: true, full_training: true })) }];
    }
    if (route === 'GET /v1/files') {
      return [200, { object: 'list', data: [...files.values()].map(({ content: _content, ...file }) => ({ ...file, object: 'file', FileType: 'jsonl' })) }];
    }
    if (route === 'POST /v1/files/upload') {
      const form = await new Request('http://fake/upload', {
        method: 'POST',
        headers: { 'content-type': request.headers['content-type'] ?? '' },
        body,
      }).formData();
      const file = form.get('file');
      const purpose = String(form.get('purpose') ?? '');
      if (!(file instanceof Blob) || purpose !== 'fine-tune') {
        return [400, { error: { message: 'file and purpose=fine-tune are required' } }];
      }
      const content = await file.text();
      for (const line of content.split('\n').filter((l) => l.trim())) {
        if (!lineExample(line)) return [400, { error: { message: `Invalid format: ${line.slice(0, 80)}` } }];
      }
      counts.uploads += 1;
      const stored: StoredFile = { id: `file-${++seq}`, filename: String(form.get('file_name') ?? 'upload.jsonl'), purpose, bytes: Buffer.byteLength(content), content };
      files.set(stored.id, stored);
      return [200, { id: stored.id, object: 'file', filename: stored.filename, bytes: stored.bytes, purpose, FileType: 'jsonl', created_at: Math.floor(Date.now() / 1000) }];
    }
    if (route === 'POST /v1/fine-tunes/estimate-price') {
      counts.estimates += 1;
      const input = json();
      const file = files.get(String(input.training_file));
      if (!file) return [400, { error: { message: `training file ${String(input.training_file)} not found` } }];
      const { tokens, dollars } = priceOf(file, Number(input.n_epochs ?? 1));
      return [200, { estimated_total_price: dollars, allowed_to_proceed: dollars <= balance, user_limit: balance, estimated_train_token_count: tokens, estimated_eval_token_count: 0 }];
    }
    if (route === 'POST /v1/fine-tunes') {
      const input = json();
      const file = files.get(String(input.training_file));
      if (!file) return [400, { error: { message: `training file ${String(input.training_file)} not found` } }];
      if (!models.includes(String(input.model))) return [400, { error: { message: `model ${String(input.model)} is not available for fine-tuning` } }];
      const epochs = Number(input.n_epochs ?? 1);
      if (priceOf(file, epochs).dollars > balance) return [402, { error: { message: 'insufficient balance', type: 'invalid_request_error' } }];
      counts.creations += 1;
      const id = `ft-${(++seq).toString(16).padStart(8, '0')}-fake`;
      const suffix = typeof input.suffix === 'string' ? input.suffix : null;
      const learnt = new Map<string, string>();
      for (const line of file.content.split('\n').filter((l) => l.trim())) {
        const example = lineExample(line)!;
        learnt.set(example.prompt, example.completion);
      }
      const job: Job = {
        id,
        status: 'pending',
        model: String(input.model),
        suffix,
        training_file: file.id,
        n_epochs: epochs,
        learning_rate: typeof input.learning_rate === 'number' ? input.learning_rate : null,
        training_type: input.training_type ?? null,
        output_name: `fakeuser/${String(input.model).split('/').pop()}-${suffix ?? 'ft'}-${id.slice(3, 11)}`,
        polls: 0,
        total_steps: Math.max(1, epochs * 3),
        steps_completed: 0,
        events: [],
        learnt,
        fate: faults.failJobs ? 'fail' : faults.cancelJobs ? 'cancel' : 'complete',
      };
      event(job, 'job_pending', 'Fine-tune request created');
      jobs.set(id, job);
      outputs.set(job.output_name, job);
      return [200, wire(job)];
    }
    if (route === 'GET /v1/fine-tunes') return [200, { data: [...jobs.values()].map(wire) }];
    const match = /^\/v1\/fine-tunes\/([^/]+)(\/events|\/cancel)?$/.exec(url.pathname);
    const job = match ? jobs.get(decodeURIComponent(match[1]!)) : undefined;
    if (match && !job) return [404, { error: { message: `fine-tune job ${match[1]} not found` } }];
    if (job && request.method === 'GET' && !match![2]) {
      advance(job);
      return [200, wire(job)];
    }
    if (job && request.method === 'GET' && match![2] === '/events') return [200, { data: job.events }];
    if (job && request.method === 'POST' && match![2] === '/cancel') {
      counts.cancels += 1;
      if (!['completed', 'error', 'cancelled'].includes(job.status)) job.status = 'cancel_requested';
      return [200, wire(job)];
    }
    return [404, { error: { message: `no route ${route}` } }];
  }

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      handle(request, body)
        .catch((error: unknown) => [500, { error: { message: String(error) } }] as [number, unknown])
        .then(([status, payload, headers]) => {
          let parsed: unknown = null;
          try {
            parsed = request.headers['content-type']?.includes('json') ? JSON.parse(body.toString('utf8')) : null;
          } catch {
            parsed = null;
          }
          requests.push({ method: request.method ?? '', path: request.url ?? '', status, body: parsed });
          response.writeHead(status, { 'content-type': 'application/json', ...(headers ?? {}) });
          response.end(JSON.stringify(payload));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const root = `http://127.0.0.1:${port}`;
  return {
    apiUrl: `${root}/v1`,
    root,
    apiKey,
    faults,
    counts,
    requests,
    jobs: () => [...jobs.values()],
    files: () => [...files.values()],
    setBalance(dollars) {
      balance = dollars;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
