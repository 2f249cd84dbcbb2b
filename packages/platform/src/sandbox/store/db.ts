// The sandbox store's connection type, its transaction helper and the timestamp mapping every row shares.
import type pg from 'pg';

export type Db = pg.Pool | pg.PoolClient;

/** Runs `fn` in a transaction on one pooled connection. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    // A connection that cannot even roll back is dropped, not returned to the pool.
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    client.release(broken);
  }
}

export function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}
