// Builds the Messages API request from the stored conversation, with prompt-cache breakpoints.
import type Anthropic from '@anthropic-ai/sdk';
import type { StoredMessage } from '../store/tables.js';
import type { MessageParam, ModelRequest } from './model.js';
import type { ToolDefinition } from './tools/tool.js';

type Block = Anthropic.Messages.ContentBlockParam;

const EPHEMERAL = { type: 'ephemeral' } as const;

/**
 * Turns stored rows into alternating user/assistant messages: consecutive messages of one role are
 * merged (a failed turn leaves a user message without an answer), and a tool_use left without its
 * result by a crash gets an error result so the history stays valid.
 */
export function toMessageParams(rows: readonly StoredMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  for (let i = 0; i < rows.length; i += 1) {
    const row = rows[i]!;
    const content = (row.content as Block[]).filter((block) => !(block.type === 'text' && block.text.length === 0));
    if (content.length === 0) continue;
    const last = out.at(-1);
    if (last && last.role === row.role) {
      (last.content as Block[]).push(...content);
    } else {
      out.push({ role: row.role, content: [...content] });
    }
    if (row.role === 'assistant') {
      const toolUses = content.filter((b): b is Anthropic.Messages.ToolUseBlockParam => b.type === 'tool_use');
      const next = rows[i + 1];
      const answered = new Set(
        next?.role === 'user'
          ? (next.content as Block[]).flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []))
          : [],
      );
      const missing = toolUses.filter((t) => !answered.has(t.id));
      if (missing.length > 0 && i < rows.length - 1) {
        out.push({
          role: 'user',
          content: missing.map((t) => ({
            type: 'tool_result' as const,
            tool_use_id: t.id,
            is_error: true,
            content: 'This tool call was interrupted and did not complete.',
          })),
        });
      }
    }
  }
  // Tool results must come first in a user message; merged text after them is fine.
  for (const message of out) {
    if (message.role === 'user' && Array.isArray(message.content)) {
      message.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
    }
  }
  return out;
}

/**
 * The request for one model call. The system prompt and tool list are the same bytes on every turn
 * and carry cache breakpoints; a third breakpoint on the newest message caches the conversation so far.
 */
export function buildRequest(options: {
  model: string;
  system: string;
  tools: readonly ToolDefinition[];
  messages: MessageParam[];
  maxTokens?: number;
}): ModelRequest {
  const tools = options.tools.map((tool, index) =>
    index === options.tools.length - 1 ? { ...tool, cache_control: EPHEMERAL } : tool,
  ) as Anthropic.Messages.Tool[];
  const messages = options.messages.map(
    (m) => ({ ...m, content: Array.isArray(m.content) ? [...m.content] : m.content }) as MessageParam,
  );
  const last = messages.at(-1);
  if (last && Array.isArray(last.content) && last.content.length > 0) {
    const index = last.content.length - 1;
    last.content[index] = { ...last.content[index], cache_control: EPHEMERAL } as Block;
  }
  return {
    model: options.model,
    max_tokens: options.maxTokens ?? 2048,
    system: [{ type: 'text', text: options.system, cache_control: EPHEMERAL }],
    ...(tools.length > 0 ? { tools } : {}),
    messages,
  };
}
