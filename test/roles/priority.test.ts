// Which process a connection's backend is: only a local Postgres backend whose title names our side
// of the connection is reniced; a pid reported by a database on another machine is left alone. And
// the worker role's idle CPU cgroup: found from /proc, joined by every thread, removed once empty.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cpuCgroupDir, IDLE_CPU_GROUP, idleCpuGroupBeside, isLocalBackend, joinIdleCpuGroup, removeIdleCpuGroup } from '../../src/priority.js';
import { sleep, waitUntil } from '../kit/wait.js';

const titles: Record<number, string> = {
  4101: 'postgres: verdict-bot: postgres bot 127.0.0.1(51234) idle',
  4102: 'postgres: verdict-bot: postgres bot [local] idle in transaction',
  4103: 'node /srv/other-app/server.js',
};
const read = (pid: number) => {
  const title = titles[pid];
  if (title === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
  return title;
};

describe('isLocalBackend', () => {
  it('takes a backend whose title names our local port, and no other', () => {
    expect(isLocalBackend({ pid: 4101, localPort: 51234, database: 'bot' }, read)).toBe(true);
    // Same pid number, another connection (a remote server's pid that happens to exist here).
    expect(isLocalBackend({ pid: 4101, localPort: 40000, database: 'bot' }, read)).toBe(false);
  });

  it('over a Unix socket, a [local] backend of our database', () => {
    expect(isLocalBackend({ pid: 4102, localPort: undefined, database: 'bot' }, read)).toBe(true);
    expect(isLocalBackend({ pid: 4102, localPort: undefined, database: 'other' }, read)).toBe(false);
  });

  it('never a process that is not Postgres, nor one that does not exist here', () => {
    expect(isLocalBackend({ pid: 4103, localPort: 51234, database: 'bot' }, read)).toBe(false);
    expect(isLocalBackend({ pid: 4999, localPort: 51234, database: 'bot' }, read)).toBe(false);
  });
});

// The idle CPU cgroup of the worker role: where it is, joining it, and removing it once empty.
describe('cpuCgroupDir', () => {
  const fakeProc = (cgroup: string, mountinfo: string, extra: Record<string, string> = {}) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'verdict-proc-'));
    mkdirSync(path.join(dir, '42'));
    mkdirSync(path.join(dir, 'self'));
    writeFileSync(path.join(dir, '42', 'cgroup'), cgroup);
    writeFileSync(path.join(dir, 'self', 'mountinfo'), mountinfo);
    for (const [file, text] of Object.entries(extra)) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
    }
    return dir;
  };
  const V1_MOUNTS = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
    '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n');

  it('cgroup v1: the cpu hierarchy where it is mounted, with the process path under it', () => {
    const proc = fakeProc('4:memory:/app\n2:cpu,cpuacct:/system.slice/bot.service\n0::/\n', V1_MOUNTS);
    expect(cpuCgroupDir(42, proc)).toBe('/sys/fs/cgroup/cpu,cpuacct/system.slice/bot.service');
  });

  it('cgroup v2: the process cgroup, only where the cpu controller is enabled below it', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'verdict-cg2-'));
    const mounts = `30 23 0:27 / ${root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate`;
    const withCpu = fakeProc('0::/bot\n', mounts, { [path.join(root, 'bot', 'cgroup.subtree_control')]: 'cpuset cpu io memory\n' });
    expect(cpuCgroupDir(42, withCpu)).toBe(path.join(root, 'bot'));
    const without = fakeProc('0::/other\n', mounts, { [path.join(root, 'other', 'cgroup.subtree_control')]: 'memory pids\n' });
    expect(cpuCgroupDir(42, without)).toBeUndefined();
  });

  it('none: no cgroup file (not Linux), or no cpu hierarchy mounted', () => {
    expect(cpuCgroupDir(42, path.join(os.tmpdir(), 'verdict-no-proc'))).toBeUndefined();
    const proc = fakeProc('4:memory:/app\n', '35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n');
    expect(cpuCgroupDir(42, proc)).toBeUndefined();
  });

  it('the idle group sits beside the process cgroup, or is that cgroup when the process is already in it', () => {
    expect(idleCpuGroupBeside('/sys/fs/cgroup/cpu')).toBe(`/sys/fs/cgroup/cpu/${IDLE_CPU_GROUP}`);
    expect(idleCpuGroupBeside(`/sys/fs/cgroup/cpu/${IDLE_CPU_GROUP}`)).toBe(`/sys/fs/cgroup/cpu/${IDLE_CPU_GROUP}`);
  });
});

describe('joinIdleCpuGroup on this machine', () => {
  const own = cpuCgroupDir();
  // A parent of our own for the group, so the test never touches a group a running bot uses.
  const parent = own && path.join(own, `verdict-test-${process.pid}`);
  let writable = false;
  if (parent) {
    try {
      mkdirSync(parent, { recursive: true });
      writable = existsSync(path.join(parent, 'cpu.idle'));
    } catch {
      writable = false;
    }
  }
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await sleep(200);
    if (parent) await removeIdleCpuGroup(path.join(parent, IDLE_CPU_GROUP));
    if (parent) await removeIdleCpuGroup(parent);
  });
  if (!writable) console.log(`no writable CPU cgroup with idle groups here (${own ?? 'none found'}; needs root and Linux 5.15+): joinIdleCpuGroup is only checked to leave the process where it was`);

  it('moves every thread of a process into an idle group and reports it; the group is removed once empty, not before', async () => {
    if (!writable) {
      expect(joinIdleCpuGroup(process.pid, path.join(os.tmpdir(), 'verdict-not-a-cgroup', 'x', IDLE_CPU_GROUP))).toBeUndefined();
      return;
    }
    const group = path.join(parent!, IDLE_CPU_GROUP);
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    children.push(child);
    await waitUntil(() => (existsSync(`/proc/${child.pid}/task`) && readdirSync(`/proc/${child.pid}/task`).length > 1 ? true : undefined), 10_000, 'the child to start its threads');
    expect(joinIdleCpuGroup(child.pid!, group)).toBe(group);
    expect(readFileSync(path.join(group, 'cpu.idle'), 'utf8').trim()).toBe('1');
    expect(cpuCgroupDir(child.pid!)).toBe(group);
    // All its threads, not only the main one.
    const tids = readdirSync(`/proc/${child.pid}/task`).map(Number);
    expect(readFileSync(path.join(group, 'tasks'), 'utf8').trim().split('\n').map(Number)).toEqual(expect.arrayContaining(tids));
    // Joining again (a restarted worker, a second backend) is fine.
    expect(joinIdleCpuGroup(child.pid!, group)).toBe(group);

    await removeIdleCpuGroup(group);
    expect(existsSync(group), 'a group in use stays').toBe(true);
    child.kill('SIGKILL');
    await waitUntil(() => (readFileSync(path.join(group, 'cgroup.procs'), 'utf8').trim() === '' ? true : undefined), 10_000, 'the child to leave the group');
    await removeIdleCpuGroup(group);
    expect(existsSync(group)).toBe(false);
  });

  it('a process that cannot be moved (gone) leaves nothing broken: undefined, no throw', async () => {
    if (!writable) return;
    expect(joinIdleCpuGroup(2 ** 22 + 12345, path.join(parent!, IDLE_CPU_GROUP))).toBeUndefined();
  });
});
