// Launches run at most once per Idempotency-Key, and only when the account's available credits cover them.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { SandboxContext } from './context.js';
import { withTransaction } from './store/db.js';
import { readAccount } from './store/settings.js';
import { type Reply, SandboxApiError, unprocessable } from './replies.js';

function requestHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/**
 * Runs `create` at most once per (scope, key): a repeated key with the same request replays the
 * stored response with status 200; with a different request it fails 422. A failed `create`
 * rolls back and leaves the key unused. Concurrent requests with one key serialize on its row.
 */
export async function withIdempotency(
  ctx: SandboxContext,
  scope: string,
  key: string | undefined,
  request: unknown,
  create: (client: pg.PoolClient) => Promise<Reply>,
): Promise<Reply> {
  if (key === undefined) return withTransaction(ctx.pool, create);
  const hash = requestHash(request);
  return withTransaction(ctx.pool, async (client) => {
    const inserted = await client.query(
      `INSERT INTO sandbox.idempotency_keys (scope, key, request_hash) VALUES ($1, $2, $3)
       ON CONFLICT (scope, key) DO NOTHING RETURNING key`,
      [scope, key, hash],
    );
    if (inserted.rowCount === 0) {
      const existing = await client.query<{ request_hash: string; response: unknown }>(
        'SELECT request_hash, response FROM sandbox.idempotency_keys WHERE scope = $1 AND key = $2',
        [scope, key],
      );
      const row = existing.rows[0]!;
      if (row.request_hash !== hash) {
        throw unprocessable('Idempotency-Key was already used with a different request body');
      }
      return { status: 200, body: row.response, headers: { 'idempotent-replayed': 'true' } };
    }
    const reply = await create(client);
    await client.query('UPDATE sandbox.idempotency_keys SET response = $3 WHERE scope = $1 AND key = $2', [
      scope,
      key,
      JSON.stringify(reply.body),
    ]);
    return reply;
  });
}

/** Locks the account and fails 402 unless balance minus in-flight prices covers `price`. */
export async function requireCredits(client: pg.PoolClient, price: number): Promise<void> {
  const account = await readAccount(client, true);
  if (account.available_credits < price) {
    throw new SandboxApiError(
      402,
      'insufficient_credits',
      `this costs ${price.toFixed(2)} credits but only ${account.available_credits.toFixed(2)} are available ` +
        `(balance ${account.balance_credits.toFixed(2)}, ${account.reserved_credits.toFixed(2)} reserved by work in flight)`,
    );
  }
}
