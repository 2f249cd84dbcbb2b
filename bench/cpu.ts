// CPU time of a process (and of its reaped children) from /proc.
import { readFile } from 'node:fs/promises';
import { statFields } from '../test/kit/proc.js';

/** CPU milliseconds (user + system) of a process; with `children`, also of its reaped children. */
export async function processCpuMs(pid: number, children = false): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!stat) return 0;
  const f = statFields(stat).map(Number);
  const ticks = f[11]! + f[12]! + (children ? f[13]! + f[14]! : 0);
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Kernel clock ticks per second (USER_HZ), 100 on Linux. */
const CLOCK_TICKS = 100;
