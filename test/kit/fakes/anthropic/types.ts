// The scripted Messages API's public types: requests, scripts and their replies, errors, the handle.
import type { IncomingHttpHeaders } from 'node:http';
import type Anthropic from '@anthropic-ai/sdk';

/** The JSON body the client sent to `POST /v1/messages`. */
export type MessagesRequest = Anthropic.MessageCreateParams;

export type StopReason = Anthropic.StopReason;

export interface TextReply {
  type: 'text';
  text: string;
}

export interface ToolUseReply {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

/** A content block of the assistant's reply; any other block type is passed through as given. */
export type ReplyBlock = TextReply | ToolUseReply | { type: string; [key: string]: unknown };

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/** An error answer in the API's shape. */
export interface ScriptError {
  status: number;
  type: AnthropicErrorType;
  message?: string;
  /** Seconds for the `retry-after` header; 429 answers carry `retry-after: 1` unless set. */
  retryAfter?: number;
  /** Sends `x-should-retry: true|false`, which the SDK obeys over its status rules. */
  shouldRetry?: boolean;
}

export type ScriptReply =
  | { content: ReplyBlock[]; stopReason?: StopReason; stopSequence?: string | null }
  | { error: ScriptError }
  | { delayMs: number; then: ScriptReply };

export interface ScriptContext {
  /** How many times the script was consulted before this call (injected failures do not count). */
  callIndex: number;
  /** Index of this request in `requests`. */
  requestIndex: number;
}

export type Script = (req: MessagesRequest, ctx: ScriptContext) => ScriptReply | Promise<ScriptReply>;

export interface RecordedRequest {
  path: string;
  body: MessagesRequest;
  headers: IncomingHttpHeaders;
  at: number;
  bytes: number;
  /** HTTP status answered; 0 while pending or when the client went away first. */
  status: number;
  response?: unknown;
  /** True when the client closed the connection before the (delayed) answer. */
  aborted?: boolean;
}

export interface ScriptedAnthropicOptions {
  /** When set, only this key is accepted (as `x-api-key` or `Authorization: Bearer`). */
  apiKey?: string;
  /** Prefixes shorter than this are not cached, like the API's per-model minimum; 0 by default. */
  minCacheableTokens?: number;
}

export interface ScriptedAnthropic {
  /** Value for the client's `baseURL`, e.g. `http://127.0.0.1:1234`. */
  baseURL: string;
  requests: RecordedRequest[];
  /** Errors thrown by the script (each answered as a 500 api_error). */
  scriptErrors: unknown[];
  setScript(script: Script): void;
  /** The next `n` requests get this error before the script is consulted. */
  failNext(n: number, error: ScriptError): void;
  /** Every request in the next `ms` milliseconds gets this error. */
  failFor(ms: number, error: ScriptError): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  clearCache(): void;
  reset(): void;
  stop(): Promise<void>;
}
