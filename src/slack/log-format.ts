// The Slack libraries' loggers (Bolt, the Web API client, @slack/oauth) over pino: their variadic
// calls formatted into one line each.
import { inspect } from 'node:util';
import { LogLevel, type Logger as SlackLogger } from '@slack/bolt';
import type { Logger } from 'pino';
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

/**
 * A Slack library's logger writing to `logger`'s child `component`. `quiet`: the library's debug
 * lines dropped and its info lines at debug (clients that talk much). `demote`: warnings that
 * another line says better, written at debug.
 */
export function slackLibraryLogger(logger: Logger, component: string, options: { quiet?: boolean; demote?: (text: string) => boolean } = {}): SlackLogger {
  const child = logger.child({ component });
  let level = LogLevel.INFO;
  return {
    debug: (...msg) => (options.quiet ? undefined : child.debug(formatLogArgs(msg))),
    info: (...msg) => (options.quiet ? child.debug(formatLogArgs(msg)) : child.info(formatLogArgs(msg))),
    warn: (...msg) => {
      const text = formatLogArgs(msg);
      if (options.demote?.(text)) child.debug(text);
      else child.warn(text);
    },
    error: (...msg) => child.error(formatLogArgs(msg)),
    setLevel: (l) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
