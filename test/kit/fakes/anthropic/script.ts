// Writing scripts: reply blocks (text, tool_use) and reading the request (last user content, tool results, all text).
import { randomBytes } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import type { MessagesRequest, TextReply, ToolUseReply } from './types.js';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Random base62 characters, as in the API's ids. */
export const randomId = (length: number): string =>
  Array.from(randomBytes(length), (byte) => BASE62[byte % BASE62.length]).join('');

/** A text content block for a scripted reply. */
export function text(s: string): TextReply {
  return { type: 'text', text: s };
}

/** A tool_use content block for a scripted reply, with a fresh `toolu_…` id unless one is given. */
export function toolUse(name: string, input: unknown, id?: string): ToolUseReply {
  return { type: 'tool_use', id: id ?? `toolu_01${randomId(22)}`, name, input };
}

/** A content block as sent, before it is known to be valid. */
export type Block = Record<string, unknown> & { type?: unknown };

/** The blocks of a message's or system prompt's content (a string becomes one text block). */
export const contentBlocks = (content: unknown): Block[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? (content as Block[]) : [];

/** The content blocks of the last user message (a string content becomes one text block). */
export function lastUserContent(req: MessagesRequest): Anthropic.ContentBlockParam[] {
  const last = [...req.messages].reverse().find((m) => m.role === 'user');
  return last ? (contentBlocks(last.content) as unknown as Anthropic.ContentBlockParam[]) : [];
}

export type ResolvedToolResult = Anthropic.ToolResultBlockParam & { name: string | undefined; input: unknown };

/** The tool_result blocks of the last user message, each with the name and input of its tool_use. */
export function lastToolResults(req: MessagesRequest): ResolvedToolResult[] {
  const index = req.messages.map((m) => m.role).lastIndexOf('user');
  if (index === -1) return [];
  const previous = [...req.messages.slice(0, index)].reverse().find((m) => m.role === 'assistant');
  const uses = new Map<string, Block>();
  for (const block of contentBlocks(previous?.content)) {
    if (block.type === 'tool_use' && typeof block.id === 'string') uses.set(block.id, block);
  }
  return contentBlocks(req.messages[index]?.content)
    .filter((b) => b.type === 'tool_result')
    .map((b) => {
      const result = b as unknown as Anthropic.ToolResultBlockParam;
      const use = uses.get(result.tool_use_id);
      return { ...result, name: typeof use?.name === 'string' ? use.name : undefined, input: use?.input };
    });
}

export function blockText(block: Block): string[] {
  if (block.type === 'text' && typeof block.text === 'string') return [block.text];
  if (block.type === 'tool_result') return contentBlocks(block.content).flatMap(blockText);
  return [];
}

/** All text of the request: system prompt, text blocks and tool results, joined by newlines. */
export function allText(req: MessagesRequest): string {
  const parts = contentBlocks(req.system).flatMap(blockText);
  for (const message of req.messages) parts.push(...contentBlocks(message.content).flatMap(blockText));
  return parts.join('\n');
}
