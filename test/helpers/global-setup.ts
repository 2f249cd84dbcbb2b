// Starts one embedded PostgreSQL for the whole test run; each test file creates its own database on it.
import type { TestProject } from 'vitest/node';
import { startPrivatePostgres } from '../kit/database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection URL of the `postgres` database on the shared embedded server. */
    pgAdminUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const postgres = await startPrivatePostgres({ folderPrefix: 'verdict-bot-test-pg-' });
  project.provide('pgAdminUrl', postgres.server.url);
  return () => postgres.stop();
}
