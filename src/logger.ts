// Structured JSON logs (pino) with every configured secret scrubbed from every line.
import { pino, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';

/**
 * Creates the root logger. `secrets` are replaced by "[redacted]" wherever they appear in a line,
 * whatever field or error message carries them.
 */
export function createLogger(options: {
  level: string;
  secrets: readonly (string | undefined)[];
  destination?: NodeJS.WritableStream;
  /** Human-readable lines instead of JSON; default: when logging to stdout and stdout is a terminal. */
  pretty?: boolean;
}): Logger {
  const secrets = options.secrets.filter((s): s is string => typeof s === 'string' && s.length >= 6);
  const scrub = (line: string) => secrets.reduce((out, secret) => out.split(secret).join('[redacted]'), line);
  const pretty = options.pretty ?? (options.destination === undefined && process.stdout.isTTY === true);
  // The prettifier reads the scrubbed JSON line, so what it prints is scrubbed too.
  const destination = pretty
    ? pinoPretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: options.destination ?? process.stdout })
    : (options.destination ?? process.stdout);
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
