// POST /webhooks/platform: verify, deduplicate by event id, and enqueue a trigger for the owning chat.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { verifyWebhook, WebhookVerificationError } from '../platform/webhooks.js';
import type { Db } from '../store/db.js';
import { findResourceByPlatformId, markResourceNotified, resourceEventKey } from '../store/resources.js';
import type { ResourceKind } from '../store/tables.js';
import { enqueueTrigger } from '../store/triggers.js';
import { readBody, sendJson } from './server.js';

const MAX_WEBHOOK_BYTES = 64 * 1024;

export function createWebhookRoute(options: { db: Db; logger: Logger; secret: string; eventRetryAttempts: number }) {
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
    const [kindWord, outcome] = event.type.split('.') as ['run' | 'training', 'completed' | 'failed'];
    const kind: ResourceKind = kindWord;
    const outcomeOf = await options.db.transaction().execute(async (trx) => {
      const receipt = await trx
        .insertInto('webhook_receipts')
        .values({ webhook_id: event.id, type: event.type, resource_id: event.data.id })
        .onConflict((oc) => oc.column('webhook_id').doNothing())
        .returning('webhook_id')
        .executeTakeFirst();
      if (!receipt) return 'duplicate' as const;
      const resource = await findResourceByPlatformId(trx, kind, event.data.id);
      if (!resource) return 'unknown' as const;
      const enqueued = await enqueueTrigger(
        trx,
        { chatId: resource.chat_id },
        {
          teamId: resource.team_id,
          kind: 'platform_event',
          dedupeKey: resourceEventKey(kind, resource.platform_id, outcome),
          userId: null,
          payload: { type: event.type, resourceKind: kind, resourceId: event.data.id, webhookId: event.id },
        },
        { maxAttempts: options.eventRetryAttempts },
      );
      await markResourceNotified(trx, resource.team_id, resource.id);
      return enqueued?.created ? ('enqueued' as const) : ('duplicate' as const);
    });
    if (outcomeOf === 'unknown') log.warn('webhook for a resource no chat started; acknowledged and ignored');
    else log.info({ outcome: outcomeOf }, 'webhook accepted');
    sendJson(res, 200, { ok: true, outcome: outcomeOf });
  };
}
