// The embedded inference server's requests: OpenAI's error shape, the request bodies it accepts, and reading them.
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';

/** A failure answered in OpenAI's error shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const invalid = (message: string, code = 'invalid_request') => new ApiError(400, 'invalid_request_error', code, message);
const MAX_BODY_BYTES = 4_000_000;

export const stopSchema = z.union([z.string(), z.array(z.string()).max(16)]).nullish();
const sampling = {
  model: z.string().min(1),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  stop: stopSchema,
  n: z.literal(1).nullish(),
  stream: z.literal(false).nullish(),
};
export const CompletionRequest = z.object({ ...sampling, prompt: z.union([z.string(), z.array(z.string()).length(1)]) });
export const ChatRequest = z.object({
  ...sampling,
  max_completion_tokens: z.number().int().positive().nullish(),
  messages: z
    .array(z.object({ role: z.enum(['system', 'developer', 'user', 'assistant']), content: z.union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() }))]) }))
    .min(1),
});
export const TokenizeRequest = z.object({ model: z.string().min(1), prompt: z.string(), add_special_tokens: z.boolean().optional() });
export const LoadLoraRequest = z.object({ lora_name: z.string().min(1).max(200), lora_path: z.string().min(1), base_model: z.string().min(1).optional() });
export const UnloadLoraRequest = z.object({ lora_name: z.string().min(1) });

function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');
}

export function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw invalid(`invalid body: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'invalid_request_error', 'body_too_large', `the request body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw invalid('the request body is empty; send JSON');
  try {
    return JSON.parse(text);
  } catch {
    throw invalid('the request body is not valid JSON');
  }
}
