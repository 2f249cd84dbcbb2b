// Files on storage another machine shares: whether a path lies inside a folder, whether a file has content, and copies made atomically so a reader never sees half of one.
import { copyFile, cp, mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';

export function inside(dir: string, file: string): boolean {
  const relative = path.relative(dir, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

export async function nonEmptyFile(file: string): Promise<boolean> {
  const info = await stat(file).catch(() => null);
  return info !== null && info.isFile() && info.size > 0;
}

/** Copies atomically (a temp file beside it, then rename), so a reader never sees half a file. */
export async function copyInto(from: string, to: string): Promise<void> {
  await mkdir(path.dirname(to), { recursive: true });
  const temp = `${to}.tmp-${process.pid}-${Date.now()}`;
  await copyFile(from, temp);
  await rename(temp, to);
}

/** Copies a folder the same way: a temp folder beside it, then it replaces the old one. */
export async function copyFolderInto(from: string, to: string): Promise<void> {
  await mkdir(path.dirname(to), { recursive: true });
  const temp = `${to}.tmp-${process.pid}-${Date.now()}`;
  await cp(from, temp, { recursive: true });
  await rm(to, { recursive: true, force: true });
  await rename(temp, to);
}
