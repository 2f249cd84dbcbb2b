// The request checks the API answers with 400 invalid_request_error: fields, roles, tool_use/tool_result pairing, caching.
import { segmentsOf } from './caching.js';
import { contentBlocks } from './script.js';
import type { MessagesRequest } from './types.js';

/** The API's 400 for a malformed request, as its message; undefined for a valid one. */
export function validate(req: unknown): string | undefined {
  if (typeof req !== 'object' || req === null) return 'body: Input should be an object';
  const r = req as Record<string, unknown>;
  if (typeof r.model !== 'string') return 'model: Field required';
  if (typeof r.max_tokens !== 'number') return 'max_tokens: Field required';
  if (!Array.isArray(r.messages)) return 'messages: Field required';
  if (r.messages.length === 0) return 'messages: at least one message is required';
  if (r.stream === true) return 'stream: streaming is not supported by the scripted fake Messages API; send stream: false';
  const messages = r.messages as { role?: unknown; content?: unknown }[];
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'user' && message.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const blocks = contentBlocks(message.content);
    const isFinalAssistant = i === messages.length - 1 && message.role === 'assistant';
    if (blocks.length === 0 || (typeof message.content === 'string' && message.content === '')) {
      if (!isFinalAssistant) return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'text' && block.text === '' && Array.isArray(message.content)) {
        return `messages.${i}.content.${j}.text: text content blocks must be non-empty`;
      }
    }
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    if (message.role === 'assistant' && uses.length > 0) {
      const next = messages[i + 1];
      const answered = new Set(contentBlocks(next?.content).filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id)));
      const missing = uses.filter((id) => !answered.has(id));
      if (missing.length > 0 && next !== undefined) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
    }
    if (message.role === 'user') {
      const results = blocks.map((b, j) => ({ b, j })).filter(({ b }) => b.type === 'tool_result');
      if (results.length > 0) {
        const previous = messages[i - 1];
        const known = new Set(
          previous?.role === 'assistant' ? contentBlocks(previous.content).filter((b) => b.type === 'tool_use').map((b) => String(b.id)) : [],
        );
        for (const { b, j } of results) {
          if (!known.has(String(b.tool_use_id))) {
            return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
          }
        }
        const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
        const lastResult = results.at(-1)?.j ?? -1;
        if (firstOther !== -1 && firstOther < lastResult) {
          return `messages.${i}: \`tool_result\` blocks must come first in the user message content, before any other block`;
        }
      }
    }
  }
  if (Array.isArray(r.tools)) {
    const names = (r.tools as { name?: unknown }[]).map((t) => t.name);
    if (new Set(names).size !== names.length) return 'tools: Tool names must be unique.';
  }
  const breakpoints = segmentsOf(req as MessagesRequest).filter((s) => s.breakpoint).length;
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  return undefined;
}
