// Platform events written to the webhook outbox, with the configured delivery faults.
import type { WebhookEventType, WebhookEventWire } from '@verdict/contract/contract';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { SandboxContext } from './context.js';
import { insertOutboxEvent } from './store/outbox.js';

/** Stores a signed-on-delivery platform event in the webhook outbox (with the configured faults). */
export async function enqueueEvent(
  ctx: SandboxContext,
  client: pg.PoolClient,
  type: WebhookEventType,
  resourceId: string,
  at: Date,
): Promise<void> {
  const id = `evt_${randomBytes(12).toString('hex')}`;
  const body: WebhookEventWire = { type, id, created_at: at.toISOString(), data: { id: resourceId } };
  const faults = ctx.faults;
  const dropped = ctx.random() < faults.webhookDrop;
  const duplicated = ctx.random() < faults.webhookDuplicate;
  const held = ctx.random() < faults.webhookReorder;
  await insertOutboxEvent(client, {
    id,
    type,
    resourceId,
    body: JSON.stringify(body),
    status: dropped ? 'dropped' : 'pending',
    copies: duplicated ? (ctx.random() < 0.5 ? 2 : 3) : 1,
    held,
    nextAttemptAt: new Date(ctx.now().getTime() + faults.webhookDelayMs),
    createdAt: ctx.now(),
  });
}
