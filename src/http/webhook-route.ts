// POST /webhooks/platform: verify, deduplicate by event id, and enqueue a trigger for the owning chat.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { FinishedStatus } from '@verdict/contract/contract';
import { verifyWebhook, WebhookVerificationError } from '@verdict/contract/webhooks';
import type { Db } from '../store/db.js';
import { createGroupCommit } from '../store/group-commit.js';
import { ingestPlatformEvents, type PlatformEventInput, type PlatformEventResult } from '../store/resource-events.js';
import { readBody, sendJson } from './server.js';

const MAX_WEBHOOK_BYTES = 64 * 1024;

/**
 * Deliveries that arrive while earlier ones are being written share the next statement (group
 * commit): under load one commit answers many deliveries, and ingest holds at most
 * `INGEST_SLOTS` database connections, leaving the rest of the pool to the turns.
 */
const INGEST_BATCH = 64;
const INGEST_SLOTS = 2;

export function createWebhookRoute(options: { db: Db; logger: Logger; secret: string; eventRetryAttempts: number }) {
  const ingest = createGroupCommit<PlatformEventInput, PlatformEventResult>({
    maxBatch: INGEST_BATCH,
    maxInFlight: INGEST_SLOTS,
    flush: (events) => ingestPlatformEvents(options.db, events, { maxAttempts: options.eventRetryAttempts }),
  });
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req, MAX_WEBHOOK_BYTES);
    if (body === undefined) return sendJson(res, 413, { error: 'body too large' });
    let event;
    try {
      event = verifyWebhook(options.secret, body, req.headers as Record<string, string | string[] | undefined>);
    } catch (error) {
      if (error instanceof WebhookVerificationError) {
        options.logger.warn({ reason: error.reason, webhookId: req.headers['webhook-id'] }, 'webhook rejected');
        return sendJson(res, 400, { error: error.message });
      }
      throw error;
    }
    const log = options.logger.child({ webhookId: event.id, type: event.type, resourceId: event.data.id });
    const [kind, outcome] = event.type.split('.') as ['run' | 'training', FinishedStatus];
    const outcomeOf = await ingest.submit({ webhookId: event.id, type: event.type, kind, resourceId: event.data.id, outcome });
    if (outcomeOf.outcome === 'unknown') log.warn('webhook for a resource no chat started; acknowledged and ignored');
    else log.info({ outcome: outcomeOf.outcome, triggerId: outcomeOf.triggerId, teamId: outcomeOf.teamId }, 'webhook accepted');
    sendJson(res, 200, { ok: true, outcome: outcomeOf.outcome });
  };
}
