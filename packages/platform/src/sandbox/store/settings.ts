// Sandbox settings (key/value) and the single account: its balance, reservations by work in flight, charges.
import type { AccountWire } from '@verdict/contract/contract';
import type { Db } from './db.js';

export async function getSetting(db: Db, key: string): Promise<string | null> {
  const result = await db.query<{ value: string }>('SELECT value FROM sandbox.settings WHERE key = $1', [key]);
  return result.rows[0]?.value ?? null;
}

export async function setSetting(db: Db, key: string, value: string): Promise<void> {
  await db.query(
    'INSERT INTO sandbox.settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
    [key, value],
  );
}

/** The stored value of `key`, storing `initial` first if there is none. */
export async function ensureSetting(db: Db, key: string, initial: string): Promise<string> {
  await db.query('INSERT INTO sandbox.settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, initial]);
  return (await getSetting(db, key))!;
}

export async function deleteSetting(db: Db, key: string): Promise<void> {
  await db.query('DELETE FROM sandbox.settings WHERE key = $1', [key]);
}

export async function ensureAccount(db: Db, startingBalance: number): Promise<void> {
  await db.query(
    `INSERT INTO sandbox.account (id, name, balance) VALUES (1, 'sandbox', $1) ON CONFLICT (id) DO NOTHING`,
    [startingBalance.toFixed(2)],
  );
}

const RESERVED_SQL = `
  (SELECT COALESCE(SUM(price), 0) FROM sandbox.runs WHERE status IN ('queued', 'running'))
  + (SELECT COALESCE(SUM(price), 0) FROM sandbox.trainings WHERE status IN ('queued', 'running'))`;

/** Balance, reserved (price of in-flight work) and available credits, summed as numeric in SQL. */
export async function readAccount(db: Db, lock = false): Promise<AccountWire> {
  const result = await db.query<{ name: string; balance: number; reserved: number; available: number }>(
    `SELECT name, balance::float8 AS balance, (${RESERVED_SQL})::float8 AS reserved,
            (balance - (${RESERVED_SQL}))::float8 AS available
       FROM sandbox.account WHERE id = 1 ${lock ? 'FOR UPDATE' : ''}`,
  );
  const row = result.rows[0]!;
  return {
    name: row.name,
    balance_credits: row.balance,
    reserved_credits: row.reserved,
    available_credits: row.available,
    environment: 'sandbox',
  };
}

export async function chargeAccount(db: Db, credits: number): Promise<void> {
  await db.query('UPDATE sandbox.account SET balance = balance - $1::numeric WHERE id = 1', [credits.toFixed(2)]);
}
