// Starts one embedded PostgreSQL for the whole test run; each test file creates its own database on it.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/store/embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection URL of the `postgres` database on the shared embedded server. */
    pgAdminUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-bot-test-pg-'));
  // Postgres runs as its own user when the tests run as root; it must be able to enter the folder.
  await chmod(dir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data') });
  project.provide('pgAdminUrl', server.url);
  return async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
