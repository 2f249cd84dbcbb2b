// Drains the webhook outbox: signed POSTs to the registered URL, retried with backoff, at least once.
import { request, type Dispatcher } from 'undici';
import { webhookHeaders } from '@verdict/contract/webhooks';
import type { SandboxContext } from './context.js';
import { getSetting } from './store/settings.js';

export const WEBHOOK_URL_SETTING = 'webhook_url';
export const WEBHOOK_URL_UPDATED_SETTING = 'webhook_url_updated_at';

/** Gap between the copies of a duplicated event. */
const DUPLICATE_GAP_MS = 25;

interface ClaimedEvent {
  id: string;
  body: string;
  attempts: number;
  deliveries: number;
  copies: number;
}

export interface WebhookSender {
  /** Sends every event that is due now; resolves when those attempts are recorded. */
  drain(): Promise<void>;
  /** Aborts attempts in flight; they are recorded as not sent and retried on the next start. */
  abort(): void;
}

export function createWebhookSender(ctx: SandboxContext, secret: string, dispatcher: Dispatcher): WebhookSender {
  let controller = new AbortController();

  function backoff(attempts: number): number {
    const { baseDelayMs, maxDelayMs } = ctx.webhookRetry;
    const step = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, attempts - 1));
    return step * (0.8 + 0.4 * Math.random());
  }

  async function claim(): Promise<ClaimedEvent[]> {
    const now = ctx.now();
    const lease = new Date(now.getTime() + ctx.webhookRetry.timeoutMs + 1_000);
    const releaseHeldBefore = new Date(now.getTime() - ctx.faults.webhookReorderMaxHoldMs);
    const result = await ctx.pool.query<ClaimedEvent>(
      `UPDATE sandbox.webhook_outbox SET next_attempt_at = $2
        WHERE id IN (
          SELECT o.id FROM sandbox.webhook_outbox o
           WHERE o.status = 'pending' AND o.next_attempt_at <= $1
             AND (NOT o.held OR o.created_at <= $3 OR EXISTS (
               SELECT 1 FROM sandbox.webhook_outbox later WHERE later.seq > o.seq AND later.status = 'delivered'))
           ORDER BY o.seq LIMIT 20 FOR UPDATE SKIP LOCKED)
        RETURNING id, body, attempts, deliveries, copies`,
      [now, lease, releaseHeldBefore],
    );
    return result.rows;
  }

  async function send(url: string, event: ClaimedEvent, signal: AbortSignal): Promise<string | null> {
    const headers = webhookHeaders(secret, event.id, ctx.now(), event.body);
    const timeout = AbortSignal.timeout(ctx.webhookRetry.timeoutMs);
    try {
      const response = await request(url, {
        method: 'POST',
        dispatcher,
        signal: AbortSignal.any([signal, timeout]),
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'benchgen-sandbox-webhooks/1' },
        body: event.body,
      });
      await response.body.dump().catch(() => undefined);
      return response.statusCode >= 200 && response.statusCode < 300 ? null : `HTTP ${response.statusCode}`;
    } catch (error) {
      if (signal.aborted) throw error;
      if (timeout.aborted) return `timed out after ${ctx.webhookRetry.timeoutMs} ms`;
      return error instanceof Error ? ((error as { code?: string }).code ?? error.message) : String(error);
    }
  }

  async function deliver(url: string, event: ClaimedEvent, signal: AbortSignal): Promise<void> {
    let failure: string | null;
    try {
      failure = await send(url, event, signal);
    } catch {
      await ctx.pool.query('UPDATE sandbox.webhook_outbox SET next_attempt_at = $2 WHERE id = $1', [event.id, ctx.now()]);
      return;
    }
    const now = ctx.now();
    if (failure === null) {
      const deliveries = event.deliveries + 1;
      const done = deliveries >= event.copies;
      await ctx.pool.query(
        `UPDATE sandbox.webhook_outbox
            SET deliveries = $2, status = $3, delivered_at = COALESCE(delivered_at, $4), next_attempt_at = $5, last_error = NULL
          WHERE id = $1`,
        [event.id, deliveries, done ? 'delivered' : 'pending', now, new Date(now.getTime() + DUPLICATE_GAP_MS)],
      );
      ctx.logger.debug({ eventId: event.id, deliveries }, 'sandbox webhook delivered');
      return;
    }
    const attempts = event.attempts + 1;
    const givenUp = attempts >= ctx.webhookRetry.maxAttempts;
    await ctx.pool.query(
      `UPDATE sandbox.webhook_outbox SET attempts = $2, status = $3, next_attempt_at = $4, last_error = $5 WHERE id = $1`,
      [event.id, attempts, givenUp ? 'failed' : 'pending', new Date(now.getTime() + backoff(attempts)), failure],
    );
    ctx.logger[givenUp ? 'warn' : 'debug']({ eventId: event.id, attempts, failure }, 'sandbox webhook delivery failed');
  }

  return {
    async drain() {
      const url = await getSetting(ctx.pool, WEBHOOK_URL_SETTING);
      if (url === null) return;
      const signal = controller.signal;
      for (;;) {
        const events = await claim();
        if (events.length === 0) return;
        await Promise.all(events.map((event) => deliver(url, event, signal)));
        if (signal.aborted) return;
      }
    },
    abort() {
      controller.abort();
      controller = new AbortController();
    },
  };
}
