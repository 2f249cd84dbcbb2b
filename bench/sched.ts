// The Linux scheduler setting that decides whether a lower priority keeps busy neighbours from slowing the
// acks on this machine: autogroups. With them on (the kernel's default), every session is one scheduling
// group for tasks in the root CPU cgroup, and a task at the lowest priority (nice 19, even SCHED_IDLE) inside
// its own group does not give way at once to a wake-up in another group (bench/floor-beside-cpu.ts, docs/
// performance.md). A process in a cgroup of its own (a systemd service, a container) is not grouped that way.
import { readFileSync, writeFileSync } from 'node:fs';
import { cpuCgroupDir } from '../src/priority.js';

const SYSCTL = '/proc/sys/kernel/sched_autogroup_enabled';

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** One line for a bench's header: whether autogroups are on and which CPU cgroup this process is in. */
export function describeScheduler(): string {
  const autogroups = read(SYSCTL);
  return `scheduler: autogroups ${autogroups === '1' ? 'on' : autogroups === '0' ? 'off' : 'unknown'}, CPU cgroup ${cpuCgroupDir() ?? 'unknown'}`;
}

/**
 * Runs `fn` with autogroups off when BENCH_NO_AUTOGROUP=1 (as root), restoring the setting after: the
 * scheduling a bot gets in a cgroup of its own, on this machine. Otherwise runs it as the machine is.
 */
export async function withBenchScheduler<T>(fn: () => Promise<T>): Promise<T> {
  if (process.env.BENCH_NO_AUTOGROUP !== '1') return fn();
  const before = read(SYSCTL);
  if (before === undefined) throw new Error(`BENCH_NO_AUTOGROUP=1: ${SYSCTL} does not exist on this machine`);
  try {
    writeFileSync(SYSCTL, '0');
  } catch (error) {
    throw new Error(`BENCH_NO_AUTOGROUP=1 needs root to write ${SYSCTL}: ${(error as Error).message}`);
  }
  try {
    return await fn();
  } finally {
    writeFileSync(SYSCTL, before);
  }
}
