// The Messages API client: retries with backoff on 429, 5xx, 529 and timeouts (the SDK's policy).
import Anthropic, { APIConnectionError, APIError } from '@anthropic-ai/sdk';
import type { Config } from '../config.js';
import type { TokenUsage } from './pricing.js';

export type MessageParam = Anthropic.Messages.MessageParam;
export type ModelRequest = Anthropic.Messages.MessageCreateParamsNonStreaming;
export type ModelResponse = Anthropic.Messages.Message;

export interface ModelClient {
  create(request: ModelRequest): Promise<ModelResponse>;
}

export function createModelClient(config: Config['agent']): ModelClient {
  const client = new Anthropic({
    apiKey: config.apiKey,
    ...(config.baseUrl ? { baseURL: config.baseUrl } : {}),
    maxRetries: config.maxRetries,
    timeout: config.timeoutMs,
  });
  return { create: (request) => client.messages.create(request) };
}

/** The client with every request scrubbed of the bot's secrets (a platform error quoting the token, say) before it is sent. */
export function withScrubbedRequests(client: ModelClient, scrubber: { scrubValue<T>(value: T): T }): ModelClient {
  return { create: (request) => client.create(scrubber.scrubValue(request)) };
}

export function usageOf(response: ModelResponse): TokenUsage {
  return {
    inputTokens: response.usage.input_tokens ?? 0,
    outputTokens: response.usage.output_tokens ?? 0,
    cacheReadTokens: response.usage.cache_read_input_tokens ?? 0,
    cacheWriteTokens: response.usage.cache_creation_input_tokens ?? 0,
  };
}

/** A short, user-facing description of a model API failure, or undefined if it is not one. */
export function describeModelFailure(error: unknown): { transient: boolean; reason: string } | undefined {
  if (error instanceof APIConnectionError) {
    return { transient: true, reason: error.message.includes('timed out') ? 'the request timed out' : 'the connection failed' };
  }
  if (error instanceof APIError) {
    const status = error.status ?? 0;
    if (status === 529) return { transient: true, reason: 'the model API is overloaded (529)' };
    if (status === 429) return { transient: true, reason: 'the model API rate limit was reached (429)' };
    if (status >= 500) return { transient: true, reason: `the model API failed (${status})` };
    return { transient: false, reason: `the model API refused the request (${status})` };
  }
  return undefined;
}
