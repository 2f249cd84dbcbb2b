// Bench settings from the environment, statistics, and the figure lines the docs quote.
import path from 'node:path';

/** Reads a numeric setting from the environment (BENCH_*), with a default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`${name} must be a number`);
  return value;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

export const median = (values: readonly number[]) => quantile(values, 0.5);

export const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));

/** Prints a figure line the docs quote. */
export function report(label: string, value: string): void {
  console.log(`  ${label.padEnd(48)} ${value}`);
}

/** True when this module is the script node was started with (not imported by bench/index.ts). */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && path.resolve(process.argv[1]) === new URL(moduleUrl).pathname;
}
