// Node's arguments for the TypeScript programs that tests run as child processes (the bot, the
// sandbox's CLI, test fixtures): the file through tsx, or the same sources compiled once per test
// run. tsx compiles each module with esbuild as it is imported, in loader hooks that Node 20 runs on
// a thread of their own; a bot start (a parent and two role processes) spent most of its CPU there.
// The test run's global setup compiles `src/`, `migrations/`, the workspace packages and the tests'
// fixtures with that same esbuild transform, once, and the tests start plain node on the output. The start-up tests that
// stand for `npm start` still run `src/main.ts` through tsx.
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { buildJavaScript } from '../../scripts/build.js';
import { removeFoldersOfGoneProcesses } from './proc.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Compiles the sources into `<root>/<folder>/` (a folder at the root, as `dist/` is) with
 * `npm run build`'s own transform (scripts/build.ts), plus the tests' fixtures; the platform's
 * trainer is linked, not copied.
 */
export async function compileForTests(folder: string): Promise<{ root: string; remove(): Promise<void> }> {
  const root = await buildJavaScript({ outDir: path.join(ROOT, folder), extraSources: ['test/**/fixtures/**/*.ts'], assets: 'link' });
  return { root, remove: () => rm(root, { recursive: true, force: true }) };
}

/** Removes the compiled folders of earlier runs whose process is gone (a run killed before its teardown). */
export const removeStaleBuilds = (): Promise<void> => removeFoldersOfGoneProcesses(ROOT, '.test-build-');

/** The folder compiled for this test run (inside vitest), else undefined (chaos scripts and benches run alone). */
async function compiledRoot(): Promise<string | undefined> {
  return process.env.VITEST ? (await import('vitest')).inject('compiledRoot') : undefined;
}

/** The compiled counterpart of a repository's .ts file (absolute, or relative to the repository), when this run has one. */
export async function compiled(script: string): Promise<string | undefined> {
  const root = await compiledRoot();
  if (!root) return undefined;
  const output = path.join(root, path.relative(ROOT, path.resolve(ROOT, script))).replace(/\.ts$/, '.js');
  return existsSync(output) ? output : undefined;
}

/** Node's arguments that run a repository's .ts file: its compiled output when there is one, else the file through tsx. */
export async function nodeArgs(script: string): Promise<string[]> {
  const output = await compiled(script);
  return output ? ['--enable-source-maps', output] : ['--import', 'tsx', path.resolve(ROOT, script)];
}

/** The compiled `src/main.js` of this run, else undefined (then the bot runs through tsx). */
export const compiledBotEntry = (): Promise<string | undefined> => compiled('src/main.ts');
