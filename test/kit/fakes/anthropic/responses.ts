// The API's answers: a message with its stop reason and usage (cut at max_tokens), and errors in the API's shape.
import { tokens, type Usage } from './caching.js';
import { randomId } from './script.js';
import type { AnthropicErrorType, MessagesRequest, ReplyBlock, ScriptError, StopReason } from './types.js';

const DEFAULT_MESSAGES: Record<AnthropicErrorType, string> = {
  invalid_request_error: 'Invalid request',
  authentication_error: 'invalid x-api-key',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'Not found',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'This request would exceed the rate limit for your organization. Please try again later.',
  api_error: 'Internal server error',
  overloaded_error: 'Overloaded',
};

/** An error answer: its body, headers (`retry-after`, `x-should-retry`) and request id. */
export function errorAnswer(error: ScriptError): { body: unknown; headers: Record<string, string>; requestId: string } {
  const headers: Record<string, string> = {};
  const retryAfter = error.retryAfter ?? (error.status === 429 ? 1 : undefined);
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  if (error.shouldRetry !== undefined) headers['x-should-retry'] = String(error.shouldRetry);
  const requestId = `req_011C${randomId(20)}`;
  const body = {
    type: 'error',
    error: { type: error.type, message: error.message ?? DEFAULT_MESSAGES[error.type] },
    request_id: requestId,
  };
  return { body, headers, requestId };
}

/** The message answering `reply`: stop reason, content cut at `max_tokens`, usage from the prompt cache. */
export function messageFor(req: MessagesRequest, reply: { content: ReplyBlock[]; stopReason?: StopReason; stopSequence?: string | null }, usageFor: (req: MessagesRequest) => Usage) {
  let content = reply.content;
  let stopReason: StopReason = reply.stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  if (!reply.stopReason && tokens(JSON.stringify(content).length) > req.max_tokens) {
    stopReason = 'max_tokens';
    const kept: ReplyBlock[] = [];
    let budget = req.max_tokens * 4;
    for (const block of content) {
      const size = JSON.stringify(block).length;
      if (size <= budget) {
        kept.push(block);
        budget -= size;
        continue;
      }
      if (block.type === 'text' && typeof block.text === 'string' && budget > 0) {
        kept.push({ type: 'text', text: block.text.slice(0, Math.max(0, budget - 30)) });
      }
      break;
    }
    content = kept;
  }
  const usage = usageFor(req);
  return {
    id: `msg_01${randomId(22)}`,
    type: 'message',
    role: 'assistant',
    model: req.model,
    content,
    stop_reason: stopReason,
    stop_sequence: reply.stopSequence ?? null,
    stop_details: null,
    container: null,
    usage: {
      input_tokens: usage.input,
      cache_creation_input_tokens: usage.creation,
      cache_read_input_tokens: usage.read,
      cache_creation: {
        ephemeral_5m_input_tokens: usage.ttl === '5m' ? usage.creation : 0,
        ephemeral_1h_input_tokens: usage.ttl === '1h' ? usage.creation : 0,
      },
      output_tokens: tokens(JSON.stringify(content).length),
      service_tier: 'standard',
      server_tool_use: null,
    },
  };
}
