// Gives a test its own fresh database on the shared embedded PostgreSQL server.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

/** Creates an empty database and returns its connection URL. */
export async function createTestDatabase(prefix = 't'): Promise<string> {
  const adminUrl = inject('pgAdminUrl');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client(adminUrl);
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
