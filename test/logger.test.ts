// The one secret scrubber: whole secrets and a webhook secret's key part, in text, JSON values and log lines.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, createScrubber } from '../src/logger.js';

describe('the secret scrubber', () => {
  it('replaces every secret, a whsec_ secret and its key part, longest first, and ignores short values', () => {
    const key = Buffer.from('a webhook signing key').toString('base64');
    const s = createScrubber(['xoxb-test-token-one', `whsec_${key}`, 'abc', undefined]);
    expect(s.scrub(`Authorization: Bearer xoxb-test-token-one; whsec_${key}; ${key}; abc`)).toBe(
      'Authorization: Bearer [redacted]; [redacted]; [redacted]; abc',
    );
  });

  it('scrubs JSON-like values deeply without changing their shape; secrets added later count too', () => {
    const s = createScrubber([]);
    const value = { text: 'token bgt_later_123', blocks: [{ type: 'section', text: { type: 'mrkdwn', text: 'bgt_later_123!' } }], n: 4 };
    expect(s.scrubValue(value)).toBe(value);
    s.add('bgt_later_123');
    expect(s.scrubValue(value)).toEqual({ text: 'token [redacted]', blocks: [{ type: 'section', text: { type: 'mrkdwn', text: '[redacted]!' } }], n: 4 });
    expect(value.text).toBe('token bgt_later_123');
  });

  it('is the scrubber of the logger it is given', async () => {
    const scrubber = createScrubber([]);
    const sink = new PassThrough();
    const lines: string[] = [];
    sink.on('data', (chunk: Buffer) => lines.push(chunk.toString()));
    const logger = createLogger({ level: 'info', scrubber, destination: sink });
    scrubber.add('sandbox-token-xyz');
    logger.error({ err: new Error('refused: Token sandbox-token-xyz') }, 'platform call failed');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.join('')).toContain('refused: Token [redacted]');
    expect(lines.join('')).not.toContain('sandbox-token-xyz');
  });
});
