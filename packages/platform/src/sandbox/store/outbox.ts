// The sandbox's webhook outbox: events stored for the webhook sender to deliver.
import type { Db } from './db.js';

export interface OutboxInsert {
  id: string;
  type: string;
  resourceId: string;
  body: string;
  status: 'pending' | 'dropped';
  copies: number;
  held: boolean;
  nextAttemptAt: Date;
  createdAt: Date;
}

export async function insertOutboxEvent(db: Db, event: OutboxInsert): Promise<void> {
  await db.query(
    `INSERT INTO sandbox.webhook_outbox (id, type, resource_id, body, status, copies, held, next_attempt_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [event.id, event.type, event.resourceId, event.body, event.status, event.copies, event.held, event.nextAttemptAt, event.createdAt],
  );
}
