// The shape of an agent tool: a zod-typed input, a run function, and a compact result for the model.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config } from '../../config.js';
import type { Platform } from '@verdict/contract/platform';
import type { Db } from '../../store/db.js';
import type { Chat, Trigger, Turn } from '../../store/tables.js';
import type { ReplyPart } from '../reply.js';
import type { SpendAuthority } from '../spend-policy.js';

export interface ToolContext {
  db: Db;
  config: Config;
  logger: Logger;
  platform: Platform;
  /** Whether the platform is the sandbox; every message about it says so. */
  sandbox: boolean;
  /** The real inference engine the in-process platform runs on (e.g. "llama.cpp, CPU, 2 threads"); named instead of "sandbox". */
  engine?: string | null;
  chat: Chat;
  turn: Turn;
  trigger: Trigger;
  /** What the turn's trigger may authorize (its handler says): the plan's next step, a button's action, or a person's request. */
  authority: SpendAuthority;
  /** The id of the tool call being run; stable across a crash-and-resume of the turn. */
  toolUseId?: string;
  /** The bot token of the chat's workspace, for reading files shared there; unset = SLACK_BOT_TOKEN. */
  slackToken?: () => Promise<string | undefined>;
}

export interface ToolResult {
  /** What the model reads: compact text or JSON, never per-question dumps. */
  content: string;
  isError?: boolean;
  /** Parts built by code that the turn's reply carries (a comparison, choices, an approval). */
  parts?: ReplyPart[];
}

export interface AgentTool<Input = unknown> {
  name: string;
  description: string;
  input: z.ZodType<Input>;
  run(input: Input, ctx: ToolContext): Promise<ToolResult>;
}

/** A failure the model should read and act on (sent back as an `is_error` tool result). */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly code: string = 'tool_error',
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

/** A failure of the catalogue (src/errors.ts), thrown to the model. */
export function toolError(failed: { code: string; message: string }): ToolError {
  return new ToolError(failed.message, failed.code);
}

export function defineTool<Input>(tool: AgentTool<Input>): AgentTool<Input> {
  return tool;
}

export interface ToolDefinition {
  name: string;
  description: string;
  input_schema: { type: 'object'; [key: string]: unknown };
}

/** JSON Schema tool definitions, generated once; the same bytes are sent on every request. */
export function toolDefinitions(tools: readonly AgentTool<never>[]): ToolDefinition[] {
  return tools.map((tool) => {
    const schema = z.toJSONSchema(tool.input as z.ZodType, { target: 'draft-7' }) as Record<string, unknown>;
    delete schema.$schema;
    return { name: tool.name, description: tool.description, input_schema: { ...schema, type: 'object' } };
  });
}
