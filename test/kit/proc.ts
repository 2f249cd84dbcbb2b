// Processes from /proc, for tests, scenarios and benches: a process's stat fields, its descendants, whether it still runs.
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces): [state, ppid, ...]; utime is index 11. */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function readStat(pid: number | string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
}

/** Every process below `pid` (children, their children, ...); empty where there is none. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(entry);
    // Undefined: a process that ended while the list was read.
    if (stat === undefined) continue;
    const ppid = Number(statFields(stat)[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of children.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** Whether a process is still running (a zombie waiting for its parent to reap it is not). */
export function isRunning(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && statFields(stat)[0] !== 'Z';
}

/** Removes the folders `<prefix><pid>` in `parent` whose process is gone (a run killed before its teardown). */
export async function removeFoldersOfGoneProcesses(parent: string, prefix: string): Promise<void> {
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    if (!name.startsWith(prefix)) continue;
    const pid = name.slice(prefix.length);
    if (/^\d+$/.test(pid) && !isRunning(Number(pid))) await rm(path.join(parent, name), { recursive: true, force: true });
  }
}
