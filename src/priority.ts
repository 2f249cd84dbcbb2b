// Scheduling priority for the worker role of `npm start`: every thread of the process, and the
// Postgres backends doing its queries when the database runs on this machine, run below the web role.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

/**
 * Lowers every thread of this process to at least `niceness`.
 *
 * On Linux a nice value belongs to a thread. The parent renices the worker's pid right after the
 * fork, which reaches only the main thread: the threads Node has already started by then (V8's
 * compiler and GC helpers, libuv's pool) keep the parent's priority, so the worker's garbage
 * collection competed with the web role's acks at full weight. Threads started later inherit from
 * the thread that starts them, so one pass at start-up covers them. Elsewhere (no /proc) only the
 * process's priority is set.
 */
function lowerThreadPriorities(niceness: number): void {
  const target = Math.min(19, niceness);
  let tids: number[];
  try {
    tids = readdirSync('/proc/self/task').map(Number).filter((tid) => Number.isInteger(tid));
  } catch {
    tids = [0];
  }
  for (const tid of tids) {
    try {
      if (os.getPriority(tid) < target) os.setPriority(tid, target);
    } catch {
      // A thread that ended meanwhile, or not permitted: it keeps its priority.
    }
  }
}

/**
 * Lowers this whole process below the rest of the machine: every thread (above), and its
 * scheduler autogroup when the process leads its own session (`npm start` forks each role with
 * its own session). With autogrouping on (Linux's default, `/proc/sys/kernel/sched_autogroup_enabled`),
 * CPU is shared first between sessions and a nice value counts only inside one: the worker at nice
 * +10 in its own session still took as much CPU as the web role's session. Its session's nice fixes
 * that. A process in someone else's session (a terminal) leaves the session's nice alone.
 */
export function lowerProcessPriority(niceness: number): void {
  lowerThreadPriorities(niceness);
  if (leadsOwnSession(process.pid)) lowerAutogroup('self', niceness);
}

/** Whether a process is its session's leader (`/proc/<pid>/stat`: the session id is the 6th field). */
function leadsOwnSession(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (2nd field) is in parentheses and may contain spaces: count after its end.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[3]) === pid;
  } catch {
    return false;
  }
}

/** Raises the nice value of a process's scheduler autogroup to `niceness`; `again` when the kernel asks to retry later. */
export function lowerAutogroup(pid: number | 'self', niceness: number): 'done' | 'again' {
  try {
    const file = `/proc/${pid}/autogroup`;
    const match = / nice (-?\d+)/.exec(readFileSync(file, 'utf8'));
    const target = Math.min(19, niceness);
    if (match && Number(match[1]) < target) writeFileSync(file, String(target));
    return 'done';
  } catch (error) {
    // EAGAIN: rate-limited. Otherwise no autogroups (disabled, or not Linux), or not permitted:
    // the group keeps its share.
    return (error as NodeJS.ErrnoException).code === 'EAGAIN' ? 'again' : 'done';
  }
}

/** What identifies one connection's backend process: the pid Postgres reported, and our end of the socket. */
export interface BackendIdentity {
  pid: number;
  /** The client's local TCP port; undefined over a Unix socket. */
  localPort: number | undefined;
  database: string | undefined;
}

/**
 * Whether `/proc/<pid>` on this machine is the Postgres backend serving this connection: its title
 * (`postgres: <user> <db> 127.0.0.1(<our port>) ...`, or `[local]` over a Unix socket) must name our
 * side of the connection. A database on another machine reports a pid that means nothing here, and
 * whatever runs here under that number is left alone.
 */
export function isLocalBackend(identity: BackendIdentity, readCmdline: (pid: number) => string = procCmdline): boolean {
  let title: string;
  try {
    title = readCmdline(identity.pid);
  } catch {
    return false;
  }
  if (!title.startsWith('postgres: ')) return false;
  if (identity.localPort !== undefined) return title.includes(`(${identity.localPort})`);
  return identity.database !== undefined && title.includes(` ${identity.database} [local]`);
}

function procCmdline(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
}

/**
 * Gives the backend of a connection this process's own niceness when it is a local Postgres
 * process (see {@link isLocalBackend}). A process at normal priority changes nothing. Postgres's own processes (WAL writer, checkpointer) are not touched: they serve
 * every role's commits.
 */
export function followProcessPriority(identity: BackendIdentity): void {
  const niceness = os.getPriority();
  if (niceness <= 0 || !isLocalBackend(identity)) return;
  try {
    if (os.getPriority(identity.pid) < niceness) os.setPriority(identity.pid, niceness);
  } catch {
    // Not permitted (a server run by another user, without privileges): it keeps its priority.
  }
  // Each Postgres backend calls setsid(), so with autogrouping on it is a scheduler group of its
  // own, where its nice value counts for nothing against other groups: the group's nice does.
  if (leadsOwnSession(identity.pid) && lowerAutogroup(identity.pid, niceness) === 'again') retryAutogroup(identity.pid, niceness, 5);
}

/** The kernel takes 10 autogroup changes a second from an unprivileged process: a pool's burst of new connections waits its turn. */
function retryAutogroup(pid: number, niceness: number, attempts: number): void {
  const timer = setTimeout(() => {
    if (lowerAutogroup(pid, niceness) === 'again' && attempts > 1) retryAutogroup(pid, niceness, attempts - 1);
  }, 100 + Math.floor(Math.random() * 400));
  timer.unref();
}
