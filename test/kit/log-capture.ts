// A pino logger whose lines the test keeps, parsed (each has pino's `time`, in ms since the epoch).
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

export function captureLogs(level: pino.LevelWithSilent = 'debug'): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
