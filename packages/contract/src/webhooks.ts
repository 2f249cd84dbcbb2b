// Standard Webhooks signing and verification for platform events (run/training completed, failed or cancelled).
import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError as LibraryVerificationError } from 'standardwebhooks';
import { WebhookEventSchema, describeZodError, type WebhookEvent } from './contract.js';

export type WebhookVerificationReason =
  | 'missing_headers'
  | 'invalid_timestamp'
  | 'stale_timestamp'
  | 'future_timestamp'
  | 'bad_signature'
  | 'malformed_body';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationReason;

  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Header bag as Node's `IncomingHttpHeaders`, a plain record, or a Fetch `Headers`. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export type SignedWebhookHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/** A new signing secret, `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function toDate(timestamp: number | Date): Date {
  return timestamp instanceof Date ? timestamp : new Date(timestamp * 1000);
}

/**
 * Signature header value `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`.
 * `timestamp` is a Date or Unix seconds.
 */
export function signWebhook(secret: string, id: string, timestamp: number | Date, body: string): string {
  return new Webhook(secret).sign(id, toDate(timestamp), body);
}

/** The three headers of one delivery attempt. */
export function webhookHeaders(secret: string, id: string, timestamp: number | Date, body: string): SignedWebhookHeaders {
  const date = toDate(timestamp);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(date.getTime() / 1000)),
    'webhook-signature': signWebhook(secret, id, date, body),
  };
}

function readHeaders(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  const names = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
  for (const name of names) {
    let value: string | string[] | null | undefined;
    if (typeof Headers !== 'undefined' && headers instanceof Headers) value = headers.get(name);
    else {
      const record = headers as Record<string, string | string[] | undefined>;
      const key = Object.keys(record).find((k) => k.toLowerCase() === name);
      value = key === undefined ? undefined : record[key];
    }
    const first = Array.isArray(value) ? value[0] : value;
    if (first) out[name] = first;
  }
  return out;
}

function reasonOf(message: string): WebhookVerificationReason {
  if (/missing/i.test(message)) return 'missing_headers';
  if (/too old/i.test(message)) return 'stale_timestamp';
  if (/too new/i.test(message)) return 'future_timestamp';
  if (/invalid signature headers/i.test(message)) return 'invalid_timestamp';
  return 'bad_signature';
}

/**
 * Verifies a delivery (signature over the exact raw body, timestamp within 5 minutes of now) and
 * validates its thin body. Throws `WebhookVerificationError` with a `reason`. Deduplicating by
 * `event.id` and fetching the resource before acting are the receiver's job.
 */
export function verifyWebhook(secret: string, rawBody: string, headers: WebhookHeaders): WebhookEvent {
  const webhook = new Webhook(secret);
  const values = readHeaders(headers);
  let payload: unknown;
  try {
    payload = webhook.verify(rawBody, values);
  } catch (error) {
    if (error instanceof LibraryVerificationError) {
      throw new WebhookVerificationError(reasonOf(error.message), `webhook rejected: ${error.message}`);
    }
    throw new WebhookVerificationError('malformed_body', 'webhook rejected: body is not JSON');
  }
  const parsed = WebhookEventSchema.safeParse(payload);
  if (!parsed.success) {
    throw new WebhookVerificationError('malformed_body', `webhook rejected: ${describeZodError(parsed.error)}`);
  }
  if (parsed.data.id !== values['webhook-id']) {
    throw new WebhookVerificationError('malformed_body', 'webhook rejected: body id differs from the webhook-id header');
  }
  return parsed.data;
}
