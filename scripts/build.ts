// `npm run build`: the bot and its workspace packages as JavaScript that plain node runs (what the
// container starts), and the same transform the tests use for their child processes
// (test/kit/compiled.ts). Type checking is `npm run typecheck`; this only strips the types.
//
// The output mirrors the repository (`<out>/src`, `<out>/migrations`, `<out>/packages/<name>/src`),
// and `<out>/node_modules/@verdict/<name>` points at `<out>/packages/<name>`, whose package.json
// exports the compiled `.js` files: the sources' `@verdict/<name>/...` imports then resolve to the
// compiled packages first, before the repository's own node_modules (whose links lead to `.ts`).
import { cp, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

export const ROOT = path.resolve(import.meta.dirname, '..');

/** The workspace packages (`packages/<name>`), read from the folder. */
export async function workspacePackages(): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, 'packages'), { withFileTypes: true });
  return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
}

export interface BuildOptions {
  /** Where the output goes (absolute, or relative to the repository). */
  outDir: string;
  /** Globs of further sources to compile, relative to the repository (the tests add their fixtures). */
  extraSources?: string[];
  /**
   * Files a package needs beside its code (the platform's Python trainer): `copy` for a build that
   * must stand alone (the container), `link` for one that lives beside the repository (the tests).
   */
  assets: 'copy' | 'link';
}

/** Files beside a package's `src/` that its code reads at run time, by package. */
const PACKAGE_ASSETS: Record<string, string[]> = { platform: ['trainer'] };

/** Compiles the bot, the migrations and every workspace package into `outDir`; returns its absolute path. */
export async function buildJavaScript(options: BuildOptions): Promise<string> {
  const outDir = path.resolve(ROOT, options.outDir);
  await rm(outDir, { recursive: true, force: true });
  const packages = await workspacePackages();
  await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/**/*.ts', 'migrations/**/*.ts', ...packages.map((name) => `packages/${name}/src/**/*.ts`), ...(options.extraSources ?? [])],
    outdir: outDir,
    outbase: ROOT,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    logLevel: 'error',
  });
  await mkdir(path.join(outDir, 'node_modules', '@verdict'), { recursive: true });
  for (const name of packages) {
    const source = JSON.parse(await readFile(path.join(ROOT, 'packages', name, 'package.json'), 'utf8')) as Record<string, unknown>;
    const compiled = { name: source.name, version: source.version, private: true, type: 'module', exports: { './*': './src/*.js' } };
    await writeFile(path.join(outDir, 'packages', name, 'package.json'), `${JSON.stringify(compiled, null, 2)}\n`);
    await symlink(path.join('..', '..', 'packages', name), path.join(outDir, 'node_modules', '@verdict', name), 'dir');
    for (const asset of PACKAGE_ASSETS[name] ?? []) {
      const from = path.join(ROOT, 'packages', name, asset);
      const to = path.join(outDir, 'packages', name, asset);
      if (options.assets === 'copy') await cp(from, to, { recursive: true, filter: (file) => !file.includes('__pycache__') });
      else await symlink(from, to, 'dir');
    }
  }
  return outDir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outDir = await buildJavaScript({ outDir: 'dist', assets: 'copy' });
  console.log(`built ${path.relative(process.cwd(), outDir) || '.'}: node ${path.relative(process.cwd(), path.join(outDir, 'src/main.js'))} starts the bot`);
}
