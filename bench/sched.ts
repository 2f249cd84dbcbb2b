// One line for a bench's header: whether Linux autogroups are on. With them on (the kernel's default) every
// session is one scheduling group, and a nice value counts only inside its session, so how much a lower
// priority keeps busy neighbours from slowing the acks depends on it (bench/floor-beside-cpu.ts).
import { readFileSync } from 'node:fs';

export function describeScheduler(): string {
  let autogroups: string | undefined;
  try {
    autogroups = readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim();
  } catch {
    autogroups = undefined;
  }
  return `scheduler: autogroups ${autogroups === '1' ? 'on' : autogroups === '0' ? 'off' : 'unknown'}`;
}
