// Structured JSON logs (pino) and the one secret scrubber for everything that leaves the bot: logs, posts, Home views, model requests.
import { pino, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';

/** Replaces every configured secret by "[redacted]" wherever it appears. */
export interface SecretScrubber {
  /** Adds secrets known only after start (the in-process sandbox's token and webhook secret). */
  add(...secrets: readonly (string | undefined | null)[]): void;
  scrub(text: string): string;
  /** A copy of a JSON-like value with every string (keys included) scrubbed. */
  scrubValue<T>(value: T): T;
}

const REDACTED = '[redacted]';
/** Shorter values are not treated as secrets: scrubbing them would mangle ordinary text. */
const MIN_SECRET_LENGTH = 6;

export function createScrubber(initial: readonly (string | undefined | null)[] = []): SecretScrubber {
  let secrets: string[] = [];
  const add = (...more: readonly (string | undefined | null)[]) => {
    const next = new Set(secrets);
    for (const secret of more) {
      if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) continue;
      next.add(secret);
      // A Standard Webhooks secret is "whsec_" + the base64 key; the key alone is just as secret.
      if (secret.startsWith('whsec_') && secret.length - 6 >= MIN_SECRET_LENGTH) next.add(secret.slice(6));
    }
    // Longest first, so a secret that contains another is replaced whole.
    secrets = [...next].sort((a, b) => b.length - a.length);
  };
  const scrub = (text: string) => (secrets.length === 0 ? text : secrets.reduce((out, secret) => (out.includes(secret) ? out.split(secret).join(REDACTED) : out), text));
  const scrubValue = <T>(value: T): T => {
    if (secrets.length === 0) return value;
    const walk = (node: unknown): unknown => {
      if (typeof node === 'string') return scrub(node);
      if (Array.isArray(node)) return node.map(walk);
      if (node && typeof node === 'object' && Object.getPrototypeOf(node) === Object.prototype) {
        return Object.fromEntries(Object.entries(node).map(([k, v]) => [scrub(k), walk(v)]));
      }
      return node;
    };
    return walk(value) as T;
  };
  add(...initial);
  return { add, scrub, scrubValue };
}

/**
 * Creates the root logger. Every secret of `scrubber` (or of `secrets`) is replaced by "[redacted]"
 * wherever it appears in a line, whatever field or error message carries it.
 */
export function createLogger(options: {
  level: string;
  secrets?: readonly (string | undefined)[];
  scrubber?: SecretScrubber;
  destination?: NodeJS.WritableStream;
  /** Human-readable lines instead of JSON; default: when logging to stdout and stdout is a terminal. */
  pretty?: boolean;
}): Logger {
  const scrubber = options.scrubber ?? createScrubber(options.secrets ?? []);
  const pretty = options.pretty ?? (options.destination === undefined && process.stdout.isTTY === true);
  // The prettifier reads the scrubbed JSON line, so what it prints is scrubbed too.
  const destination = pretty
    ? pinoPretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: options.destination ?? process.stdout })
    : (options.destination ?? process.stdout);
  return pino(
    {
      level: options.level,
      base: { pid: process.pid },
      redact: { paths: ['token', '*.token', 'headers.authorization', '*.headers.authorization', 'apiKey'], censor: REDACTED },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    { write: (line: string) => destination.write(scrubber.scrub(line)) },
  );
}

export type { Logger };
