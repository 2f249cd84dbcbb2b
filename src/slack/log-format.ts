// Formats the variadic log calls of Bolt and the Slack Web API client for pino.
import { inspect } from 'node:util';
import { describeError } from '@verdict/runtime/startup-error';

/** One readable string for Bolt's and the Web API's variadic log calls: objects inspected, never "[object Object]". */
export function formatLogArgs(msg: unknown[]): string {
  return msg
    .map((part) =>
      typeof part === 'string'
        ? part
        : part instanceof Error
          ? describeError(part)
          : inspect(part, { breakLength: Infinity, depth: 4 }),
    )
    .join(' ');
}
