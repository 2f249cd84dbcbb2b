import { describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';
import { createDb, migrateToLatest } from '../../src/store/db.js';
import { freePort } from '@verdict/runtime/embedded-postgres';
import { createTestDatabase } from '../kit/database.js';

const logger = createLogger({ level: 'silent', secrets: [] });
const webhook = async () => undefined;

describe('GET /healthz', () => {
  it('answers 200 when the database is reachable', async () => {
    const db = createDb(await createTestDatabase('health'));
    await migrateToLatest(db.db);
    const http = await startHttpServer({ db: db.db, logger, port: 0, host: '127.0.0.1', slack: undefined, webhook });
    try {
      const res = await fetch(`${http.url}/healthz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
      expect((await fetch(`${http.url}/nope`)).status).toBe(404);
    } finally {
      await http.close();
      await db.close();
    }
  });

  it('answers 503 when it is not', async () => {
    const port = await freePort();
    const db = createDb(`postgres://postgres:postgres@127.0.0.1:${port}/none`);
    const http = await startHttpServer({ db: db.db, logger, port: 0, host: '127.0.0.1', slack: undefined, webhook });
    try {
      const res = await fetch(`${http.url}/healthz`);
      expect(res.status).toBe(503);
    } finally {
      await http.close();
      await db.close();
    }
  });
});
