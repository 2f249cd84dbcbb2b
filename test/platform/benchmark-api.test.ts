// Benchmark endpoints over real HTTP: BENCHMARKS_DIR files, uploads as JSONL or JSON, refused files with every bad line.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformError } from '@verdict/contract/errors';
import type { Platform } from '@verdict/contract/platform';
import type { SandboxHandle } from '@verdict/platform/sandbox/sandbox';
import { startTestSandbox } from './helpers.js';

const jsonl = (...objects: object[]) => objects.map((o) => JSON.stringify(o)).join('\n') + '\n';
const STORIES = jsonl(
  { id: 's1', question: 'Once upon a time, there was a little girl named', answer: 'Lily', category: 'names' },
  { id: 's2', question: 'One day, Lily went to the', answer: 'park', category: 'places' },
  { id: 's3', question: 'She saw a big', answer: 'tree', category: 'places' },
);

let dir: string;
let sandbox: SandboxHandle;
let platform: Platform;
let databaseUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'benchmarks-api-'));
  await writeFile(join(dir, 'stories.jsonl'), STORIES);
  await writeFile(join(dir, 'broken.jsonl'), jsonl({ id: 'a', question: 'q', answer: 'x' }, { id: 'a', question: 'q2' }));
  ({ sandbox, platform, databaseUrl } = await startTestSandbox({ benchmarksDir: dir }));
});

afterAll(async () => {
  await sandbox?.stop();
});

async function rejection(promise: Promise<unknown>): Promise<PlatformError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(PlatformError);
  return error as PlatformError;
}

type UploadReply = { id?: string; question_count?: number; error: { code: string; message: string; details: unknown } };

async function post(path: string, body: string, contentType: string) {
  const response = await request(`${sandbox.url}/api/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Token ${sandbox.token}`, 'content-type': contentType },
    body,
  });
  return { status: response.statusCode, json: (await response.body.json()) as UploadReply };
}

describe('BENCHMARKS_DIR', () => {
  it('serves a file by its name, with its questions, categories and a quoted price', async () => {
    const benchmark = await platform.getBenchmark('stories');
    expect(benchmark).toMatchObject({
      id: 'stories',
      questionCount: 3,
      scoring: 'exact_match',
      categories: [
        { name: 'names', questionCount: 1 },
        { name: 'places', questionCount: 2 },
      ],
      environment: 'sandbox',
      pricing: { type: 'flat' },
    });
    expect(benchmark.description).toBe('3 questions from stories.jsonl in BENCHMARKS_DIR, read as our benchmark format');
    expect(benchmark.sourceFormat).toEqual({ id: 'ours', name: 'our benchmark format', mapping: [] });
    const listed = await platform.listBenchmarks();
    expect(listed.map((b) => b.id)).toEqual(expect.arrayContaining(['stories', '104']));
    expect(listed.map((b) => b.id)).not.toContain('broken');
  });

  it('refuses a run of a file on a simulated model with 422 saying why, not 404', async () => {
    const error = await rejection(platform.launchRun({ benchmarkId: 'stories', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, 'file-on-simulated-1'));
    expect(error).toMatchObject({ code: 'invalid_request', status: 422 });
    expect(error.message).toContain('benchmark stories is a benchmark file, which only a model on a real engine');
    expect(error.message).toContain('model qwen/Qwen2.5-0.5B-Instruct is simulated');
    const missing = await rejection(platform.launchRun({ benchmarkId: 'nowhere', modelId: 'qwen/Qwen2.5-0.5B-Instruct' }, 'file-on-simulated-2'));
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('answers a refused file with 422 naming each bad line and field', async () => {
    const error = await rejection(platform.getBenchmark('broken'));
    expect(error).toMatchObject({ code: 'invalid_request', status: 422 });
    expect(error.message).toContain('line 2, field answer: is required');
    expect(error.message).toContain('line 2, field id: duplicate id "a" (first on line 1)');
  });

  it('picks up a file added while running', async () => {
    await expect(platform.getBenchmark('later')).rejects.toMatchObject({ code: 'not_found' });
    await writeFile(join(dir, 'later.jsonl'), jsonl({ id: '1', question: 'q', answer: 'a' }));
    expect((await platform.getBenchmark('later')).questionCount).toBe(1);
  });
});

describe('POST /benchmarks', () => {
  it('stores an upload through the client, idempotently, and serves it after a restart', async () => {
    const content = jsonl({ id: 'm1', question: 'Which is a fruit?', choices: ['Rock', 'Apple'], answer: 'B' });
    const created = await platform.uploadBenchmark({ id: 'fruit', fileName: 'fruit.jsonl', content });
    expect(created).toMatchObject({ id: 'fruit', questionCount: 1, description: '1 question from the uploaded file fruit.jsonl, read as our benchmark format' });
    const again = await platform.uploadBenchmark({ id: 'fruit', content });
    expect(again).toEqual(created);
    const other = await rejection(platform.uploadBenchmark({ id: 'fruit', content: jsonl({ id: 'x', question: 'q', answer: 'a' }) }));
    expect(other).toMatchObject({ code: 'invalid_request', status: 409 });
    expect(other.message).toMatch(/taken by an earlier upload/);

    await sandbox.stop();
    ({ sandbox, platform } = await startTestSandbox({ benchmarksDir: dir, databaseUrl }));
    expect(await platform.getBenchmark('fruit')).toEqual(created);
  });

  it('takes the JSONL file itself as the body', async () => {
    const { status, json } = await post('/benchmarks?id=stories-raw&file_name=s.jsonl', STORIES, 'application/x-ndjson');
    expect(status).toBe(201);
    expect(json).toMatchObject({ id: 'stories-raw', question_count: 3 });
    expect((await post('/benchmarks?id=stories-raw', STORIES, 'application/x-ndjson')).status).toBe(200);
    const missing = await post('/benchmarks', STORIES, 'application/x-ndjson');
    expect(missing.status).toBe(400);
  });

  it('refuses a bad file whole with 422 and every bad line in details, storing nothing', async () => {
    const bad = '{"id": "1", "question": "q", "answer": "a"}\nnot json\n{"id": "3", "question": "q", "answer": "x", "scorer": "fuzzy"}\n';
    const { status, json } = await post('/benchmarks?id=half', bad, 'application/x-ndjson');
    expect(status).toBe(422);
    expect(json.error.code).toBe('invalid_request');
    expect(json.error.details).toEqual([
      { line: 2, message: expect.stringMatching(/not valid JSON/) },
      { line: 3, field: 'scorer', message: 'unknown scorer "fuzzy" (one of: exact, numeric, choice, contains, regex)' },
    ]);
    expect(json.error.message).toMatch(/^benchmark file half\.jsonl \(read as our benchmark format\) is refused whole:\nline 2: not valid JSON/);
    await expect(platform.getBenchmark('half')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('will not shadow a built-in benchmark or a BENCHMARKS_DIR file', async () => {
    const content = jsonl({ id: '1', question: 'q', answer: 'a' });
    expect(await rejection(platform.uploadBenchmark({ id: '104', content }))).toMatchObject({ status: 409 });
    expect((await rejection(platform.uploadBenchmark({ id: 'stories', content }))).message).toMatch(/stories\.jsonl in BENCHMARKS_DIR/);
    expect(await platform.uploadBenchmark({ id: 'stories', content: STORIES })).toMatchObject({ id: 'stories', questionCount: 3 });
  });
});
