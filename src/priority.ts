// Scheduling priority for the worker role of `npm start`: every thread of the process, and the
// Postgres backends doing its queries when the database runs on this machine, run below the web role:
// at a higher nice value, and by default (WORKER_PRIORITY=idle) in an idle CPU cgroup where the
// machine allows it.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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
 * Lowers this whole process below the rest of the machine and says how (for the role's ready line):
 * every thread (above), and its scheduler autogroup when the process leads its own session (`npm
 * start` forks each role with its own session). With autogrouping on (Linux's default,
 * `/proc/sys/kernel/sched_autogroup_enabled`), CPU is shared first between sessions and a nice value
 * counts only inside one: the worker at nice +10 in its own session still took as much CPU as the web
 * role's session. Its session's nice fixes that in part. With `idleGroup`, the process also moves into
 * an idle CPU cgroup where this machine allows it ({@link joinIdleCpuGroup}), which is what keeps it
 * from delaying the web role; its database backends follow ({@link followProcessPriority}). A process
 * in someone else's session (a terminal) leaves the session's nice alone.
 */
export function lowerProcessPriority(niceness: number, options: { idleGroup: boolean }): string {
  lowerThreadPriorities(niceness);
  if (leadsOwnSession(process.pid)) lowerAutogroup('self', niceness);
  idleGroup = options.idleGroup ? joinIdleCpuGroup(process.pid) : undefined;
  const nice = `nice ${os.getPriority()}`;
  return idleGroup ? `${nice}, in the idle CPU cgroup ${idleGroup}` : nice;
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

/** The name of the CPU cgroup, beside this process's own, where the worker role and its backends run at idle weight. */
export const IDLE_CPU_GROUP = 'verdict-idle';

/** The idle CPU cgroup this process joined ({@link lowerProcessPriority}); its database backends join it too. */
let idleGroup: string | undefined;

/**
 * The directory of the CPU cgroup a process is in: the cgroup v1 hierarchy with the `cpu` controller, or
 * cgroup v2 where the `cpu` controller is enabled. Undefined where there is none this process can see.
 */
export function cpuCgroupDir(pid: number | 'self' = 'self', proc = '/proc'): string | undefined {
  let cgroups: string;
  let mounts: string;
  try {
    cgroups = readFileSync(`${proc}/${pid}/cgroup`, 'utf8');
    mounts = readFileSync(`${proc}/self/mountinfo`, 'utf8');
  } catch {
    return undefined;
  }
  // mountinfo: id parent major:minor root mount-point options [optional fields] - fstype source super-options
  const mountList = mounts.split('\n').flatMap((line) => {
    const [left, right] = line.split(' - ');
    if (!left || !right) return [];
    const fields = left.split(' ');
    const [fstype, , superOptions = ''] = right.split(' ');
    return [{ root: fields[3] ?? '/', point: fields[4] ?? '', fstype, options: superOptions.split(',') }];
  });
  const under = (mount: { root: string; point: string }, cgroupPath: string) =>
    // resolve: no trailing slash for the root cgroup ("/sys/fs/cgroup/cpu", not ".../cpu/").
    path.resolve(path.join(mount.point, mount.root !== '/' && cgroupPath.startsWith(mount.root) ? cgroupPath.slice(mount.root.length) : cgroupPath));
  const lines = cgroups.split('\n').map((line) => line.split(':')).filter((fields) => fields.length >= 3);
  // cgroup v1: "<id>:cpu,cpuacct:/path", mounted with the `cpu` option.
  for (const [, controllers, ...rest] of lines) {
    if (!controllers!.split(',').includes('cpu')) continue;
    const mount = mountList.find((m) => m.fstype === 'cgroup' && m.options.includes('cpu'));
    if (mount) return under(mount, rest.join(':'));
  }
  // cgroup v2: "0::/path", where the cpu controller is enabled.
  const unified = lines.find(([id, controllers]) => id === '0' && controllers === '');
  const mount = mountList.find((m) => m.fstype === 'cgroup2');
  if (!unified || !mount) return undefined;
  const dir = under(mount, unified.slice(2).join(':'));
  try {
    return readFileSync(path.join(dir, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('cpu') ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** The idle CPU group beside this process's own CPU cgroup (see {@link joinIdleCpuGroup}); undefined without a CPU cgroup. */
export function idleCpuGroupBeside(base = cpuCgroupDir('self')): string | undefined {
  if (!base) return undefined;
  return path.basename(base) === IDLE_CPU_GROUP ? base : path.join(base, IDLE_CPU_GROUP);
}

/**
 * Moves a process (all its threads) into an idle CPU cgroup ({@link IDLE_CPU_GROUP}, `cpu.idle` = 1),
 * created beside this process's own cgroup if need be, and returns the group's directory; undefined
 * where that is not possible (no writable CPU cgroup: not root, a read-only cgroup filesystem, a kernel
 * before 5.15, not Linux), leaving the process where it was.
 *
 * Why: with autogroups on (Linux's default) every session is one scheduling group, and a group of
 * nice-19 tasks still takes its turn on the CPU before a woken task of another group runs (measured in
 * docs/performance.md: a real LoRA training at the worker's nice +10 slowed the ack floor 1.5x, in an
 * idle cgroup 1.1x). Tasks in a cgroup other than the root one are not autogrouped, and an idle group
 * gives way to any other task that wakes up.
 */
export function joinIdleCpuGroup(pid: number, group = idleCpuGroupBeside()): string | undefined {
  if (!group) return undefined;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      mkdirSync(group, { recursive: true });
      if (!existsSync(path.join(group, 'cpu.idle'))) {
        // A kernel before 5.15 (no idle groups), or a v2 group without the cpu controller.
        rmdirSync(group);
        return undefined;
      }
      writeFileSync(path.join(group, 'cpu.idle'), '1');
      writeFileSync(path.join(group, 'cgroup.procs'), String(pid));
      return group;
    } catch (error) {
      // ENOENT: another bot's parent removed the empty group between our mkdir and our write; once more.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    }
  }
  return undefined;
}

/**
 * Removes the idle CPU group once no process is in it: the parent of `npm start` calls it after its
 * worker stopped. A group still in use (another bot's worker on this machine, or a backend of ours
 * still exiting, asked once more after 200 ms) is left to its last user; so is one we may not remove.
 */
export async function removeIdleCpuGroup(group: string | undefined): Promise<void> {
  if (!group) return;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      rmdirSync(group);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EBUSY') return;
      if (attempt === 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
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
  // The worker's own idle CPU group: it cannot be removed while the worker is in it.
  if (idleGroup) moveToCpuGroup(identity.pid, idleGroup);
}

function moveToCpuGroup(pid: number, group: string): void {
  try {
    writeFileSync(path.join(group, 'cgroup.procs'), String(pid));
  } catch {
    // The backend exited meanwhile, or not permitted: it keeps the web role's weight.
  }
}

/** The kernel takes 10 autogroup changes a second from an unprivileged process: a pool's burst of new connections waits its turn. */
function retryAutogroup(pid: number, niceness: number, attempts: number): void {
  const timer = setTimeout(() => {
    if (lowerAutogroup(pid, niceness) === 'again' && attempts > 1) retryAutogroup(pid, niceness, attempts - 1);
  }, 100 + Math.floor(Math.random() * 400));
  timer.unref();
}
