// Starts one embedded PostgreSQL for the whole test run (each test file creates its own database on
// it), compiles the sources once for the tests' child processes (test/kit/compiled.ts), and gives
// the run a temporary folder of its own, removed at the end (test/kit/run-temp.ts).
import type { TestProject } from 'vitest/node';
import { compileForTests, removeStaleBuilds } from '../kit/compiled.js';
import { startPrivatePostgres } from '../kit/database.js';
import { useRunTempDir } from '../kit/run-temp.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection URL of the `postgres` database on the shared embedded server. */
    pgAdminUrl: string;
    /** The folder where this run's sources are compiled, for the tests' child processes (test/kit/compiled.ts). */
    compiledRoot: string;
  }
}

export default async function setup(project: TestProject) {
  await removeStaleBuilds();
  const temp = await useRunTempDir();
  const [postgres, build] = await Promise.all([startPrivatePostgres({ folderPrefix: 'verdict-bot-test-pg-' }), compileForTests(`.test-build-${process.pid}`)]);
  project.provide('pgAdminUrl', postgres.server.url);
  project.provide('compiledRoot', build.root);
  return async () => {
    try {
      await build.remove();
    } finally {
      await postgres.stop().finally(() => temp.remove());
    }
  };
}
