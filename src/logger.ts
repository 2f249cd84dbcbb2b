// Structured JSON logs (pino) with every configured secret scrubbed from every line.
import { pino, type Logger } from 'pino';

/**
 * Creates the root logger. `secrets` are replaced by "[redacted]" wherever they appear in a line,
 * whatever field or error message carries them.
 */
export function createLogger(options: { level: string; secrets: readonly (string | undefined)[]; destination?: NodeJS.WritableStream }): Logger {
  const secrets = options.secrets.filter((s): s is string => typeof s === 'string' && s.length >= 6);
  const scrub = (line: string) => secrets.reduce((out, secret) => out.split(secret).join('[redacted]'), line);
  const destination = options.destination ?? process.stdout;
  return pino(
    {
      level: options.level,
      base: { pid: process.pid },
      redact: { paths: ['token', '*.token', 'headers.authorization', '*.headers.authorization', 'apiKey'], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    { write: (line: string) => destination.write(scrub(line)) },
  );
}

export type { Logger };
