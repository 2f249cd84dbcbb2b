// Webhook signing and verification: valid deliveries pass, every kind of forgery or staleness is rejected.
import { describe, expect, it } from 'vitest';
import {
  WebhookVerificationError,
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  webhookHeaders,
} from '@verdict/contract/webhooks';
import { signStandardWebhook } from '../kit/signing.js';

const secret = generateWebhookSecret();
const now = () => Math.floor(Date.now() / 1000);

function delivery(overrides: { id?: string; type?: string; timestamp?: number; body?: string } = {}) {
  const id = overrides.id ?? 'evt_0123456789abcdef';
  const body =
    overrides.body ??
    JSON.stringify({ type: overrides.type ?? 'run.completed', id, created_at: new Date().toISOString(), data: { id: 'run_1001' } });
  return { body, headers: webhookHeaders(secret, id, overrides.timestamp ?? now(), body) };
}

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).reason;
  }
  throw new Error('expected verification to fail');
}

describe('webhooks', () => {
  it('generates whsec_ secrets of 32 random bytes', () => {
    const generated = generateWebhookSecret();
    expect(generated).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(generated.slice(6), 'base64')).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(generated);
  });

  it('signs "<id>.<timestamp>.<body>" with HMAC-SHA256 as v1,<base64>', () => {
    const expected = signStandardWebhook(secret, 'evt_1', 1_700_000_000, '{"a":1}');
    expect(expected).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(signWebhook(secret, 'evt_1', 1_700_000_000, '{"a":1}')).toBe(expected);
    expect(signWebhook(secret, 'evt_1', new Date(1_700_000_000_500), '{"a":1}')).toBe(expected);
  });

  it('accepts a valid delivery and returns the typed event', () => {
    const { body, headers } = delivery({ type: 'training.failed' });
    const event = verifyWebhook(secret, body, headers);
    expect(event).toMatchObject({ type: 'training.failed', id: 'evt_0123456789abcdef', data: { id: 'run_1001' } });
    expect(typeof event.createdAt).toBe('string');
  });

  it('accepts Node-style, upper-case and Fetch Headers', () => {
    const { body, headers } = delivery();
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), [v]]));
    expect(verifyWebhook(secret, body, upper).id).toBe('evt_0123456789abcdef');
    expect(verifyWebhook(secret, body, new Headers(headers)).id).toBe('evt_0123456789abcdef');
  });

  it('accepts a signature list that contains one valid entry', () => {
    const { body, headers } = delivery();
    const rotated = { ...headers, 'webhook-signature': `v1,AAAA ${headers['webhook-signature']}` };
    expect(verifyWebhook(secret, body, rotated).type).toBe('run.completed');
  });

  it('rejects a tampered body', () => {
    const { body, headers } = delivery();
    expect(reason(() => verifyWebhook(secret, body.replace('run_1001', 'run_6666'), headers))).toBe('bad_signature');
  });

  it('rejects a delivery signed with another secret', () => {
    const { body, headers } = delivery();
    expect(reason(() => verifyWebhook(generateWebhookSecret(), body, headers))).toBe('bad_signature');
  });

  it('rejects a timestamp older than 5 minutes, and one more than 5 minutes ahead', () => {
    expect(reason(() => {
      const { body, headers } = delivery({ timestamp: now() - 310 });
      verifyWebhook(secret, body, headers);
    })).toBe('stale_timestamp');
    expect(reason(() => {
      const { body, headers } = delivery({ timestamp: now() + 310 });
      verifyWebhook(secret, body, headers);
    })).toBe('future_timestamp');
    const { body, headers } = delivery({ timestamp: now() - 240 });
    expect(verifyWebhook(secret, body, headers).type).toBe('run.completed');
  });

  it('rejects a replayed old delivery, also when its timestamp header is refreshed', () => {
    const old = delivery({ timestamp: now() - 3600 });
    expect(reason(() => verifyWebhook(secret, old.body, old.headers))).toBe('stale_timestamp');
    const refreshed = { ...old.headers, 'webhook-timestamp': String(now()) };
    expect(reason(() => verifyWebhook(secret, old.body, refreshed))).toBe('bad_signature');
  });

  it('rejects missing headers and a non-numeric timestamp', () => {
    const { body, headers } = delivery();
    const { 'webhook-signature': _signature, ...unsigned } = headers;
    expect(reason(() => verifyWebhook(secret, body, unsigned))).toBe('missing_headers');
    expect(reason(() => verifyWebhook(secret, body, {}))).toBe('missing_headers');
    expect(reason(() => verifyWebhook(secret, body, { ...headers, 'webhook-timestamp': 'yesterday' }))).toBe(
      'invalid_timestamp',
    );
  });

  it('rejects a correctly signed body that is not a valid event', () => {
    const unknownType = delivery({ type: 'run.exploded' });
    expect(reason(() => verifyWebhook(secret, unknownType.body, unknownType.headers))).toBe('malformed_body');
    const notJson = delivery({ body: 'not json' });
    expect(reason(() => verifyWebhook(secret, notJson.body, notJson.headers))).toBe('malformed_body');
    const missingData = delivery({ body: JSON.stringify({ type: 'run.completed', id: 'evt_0123456789abcdef', created_at: new Date().toISOString() }) });
    const error = (() => {
      try {
        verifyWebhook(secret, missingData.body, missingData.headers);
      } catch (e) {
        return e as WebhookVerificationError;
      }
      throw new Error('expected failure');
    })();
    expect(error.reason).toBe('malformed_body');
    expect(error.message).toMatch(/data/);
    const otherId = delivery({ id: 'evt_other', body: delivery().body });
    expect(reason(() => verifyWebhook(secret, otherId.body, otherId.headers))).toBe('malformed_body');
  });
});
