// Slack's Web API wire format: arguments in (query, form, JSON, multipart), `{ ok, error }` answers out.
import type { IncomingMessage } from 'node:http';
import type { BlockProblem } from './block-kit.js';

/** One workspace as the fake resolves it from a token. */
export interface Team {
  teamId: string;
  teamName: string;
  domain: string;
  botUserId: string;
  botId: string;
  appId: string;
  enterpriseId?: string;
  /** A token of an org-wide installation (OAuth): auth.test says so. */
  isEnterpriseInstall?: boolean;
}

/** What a method answers: HTTP status, JSON body, extra headers. */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** A call as a method handler sees it. */
export interface Ctx {
  method: string;
  args: Record<string, unknown>;
  team: Team;
}

export type MethodHandler = (ctx: Ctx) => Answer;

/** Form fields that stay strings even when they look like JSON. */
const TEXT_ARGS = new Set([
  'text',
  'markdown_text',
  'initial_comment',
  'title',
  'alt_text',
  'filename',
  'name',
  'username',
  'icon_emoji',
  'icon_url',
  'query',
  'content',
  'private_metadata',
  'value',
]);

export const ok = (body: Record<string, unknown> = {}): Answer => ({ status: 200, body: { ok: true, ...body } });
export const fail = (error: string, extra: Record<string, unknown> = {}): Answer => ({
  status: 200,
  body: { ok: false, error, ...extra },
});

export const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;
export const truthy = (value: unknown): boolean => value === true || value === 'true' || value === '1' || value === 1;
export const isObj = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export interface MultipartPart {
  name: string;
  filename?: string;
  data: Buffer;
}

export function parseMultipart(body: Buffer, contentType: string): MultipartPart[] {
  const match = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary) return [];
  const delimiter = Buffer.from(`--${boundary.trim()}`);
  const parts: MultipartPart[] = [];
  let start = body.indexOf(delimiter);
  while (start !== -1) {
    start += delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    if (body[start] === 13 && body[start + 1] === 10) start += 2;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    let part = body.subarray(start, next);
    if (part.length >= 2 && part[part.length - 2] === 13 && part[part.length - 1] === 10) {
      part = part.subarray(0, part.length - 2);
    }
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd !== -1) {
      const headers = part.subarray(0, headerEnd).toString('utf8');
      const filename = /filename="([^"]*)"/i.exec(headers)?.[1];
      parts.push({
        name: /;\s*name="([^"]*)"/i.exec(headers)?.[1] ?? '',
        ...(filename !== undefined ? { filename } : {}),
        data: part.subarray(headerEnd + 4),
      });
    }
    start = next;
  }
  return parts;
}

function decodeFormValue(key: string, value: string): unknown {
  if (TEXT_ARGS.has(key)) return value;
  const first = value.trimStart()[0];
  if (first !== '[' && first !== '{') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

export function parseArgs(body: Buffer, contentType: string, query: URLSearchParams): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [key, value] of query) args[key] = decodeFormValue(key, value);
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (body.length === 0) return args;
  if (mediaType === 'application/json') {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    if (isObj(parsed)) Object.assign(args, parsed);
  } else if (mediaType === 'multipart/form-data') {
    for (const part of parseMultipart(body, contentType)) {
      args[part.name] = part.filename !== undefined ? part.data : decodeFormValue(part.name, part.data.toString('utf8'));
    }
  } else {
    for (const [key, value] of new URLSearchParams(body.toString('utf8'))) args[key] = decodeFormValue(key, value);
  }
  return args;
}

/** Refuses a call whose blocks break Slack's limits, as Slack does, and records each problem as a violation. */
export function refuseInvalid(violations: string[], method: string, error: string, problems: BlockProblem[]): Answer {
  const details = problems.map((p) => `${p.message} [json-pointer:${p.pointer}]`);
  for (const detail of details) violations.push(`${method}: ${detail}`);
  return fail(error, { errors: details, response_metadata: { messages: details.map((d) => `[ERROR] ${d}`) } });
}
