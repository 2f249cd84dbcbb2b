// Start-up failures that name the setting they come from, and a one-line cause for any thrown value.

/** A start-up failure traced to one setting; the message is one line saying what to do. */
export class StartupError extends Error {
  constructor(
    /** The environment variable the failure comes from (DATABASE_URL, PORT, SLACK_BOT_TOKEN, ...). */
    readonly setting: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/**
 * One line for whatever was thrown: the message, else the code, else the messages of an
 * AggregateError (a connect to `localhost` tries ::1 and 127.0.0.1 and fails with an empty message),
 * else what the value is; never "undefined" or "[object Object]".
 */
export function describeError(error: unknown): string {
  if (error === undefined || error === null) return `an unexplained failure (${String(error)} was thrown)`;
  if (typeof error !== 'object') return String(error).replace(/\s*\n\s*/g, ' ');
  const e = error as { message?: unknown; code?: unknown; errors?: unknown };
  let text = typeof e.message === 'string' ? e.message.trim() : '';
  if (!text && Array.isArray(e.errors) && e.errors.length > 0) {
    text = [...new Set(e.errors.map((inner) => describeError(inner)))].join('; ');
  }
  if (!text && typeof e.code === 'string') text = e.code;
  if (!text) {
    try {
      text = JSON.stringify(error);
    } catch {
      text = Object.prototype.toString.call(error);
    }
    if (text === '{}') text = `${(error as object).constructor?.name ?? 'object'} without a message`;
  }
  return text.replace(/\s*\n\s*/g, ' ');
}

/** A connection string with its password replaced, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}
