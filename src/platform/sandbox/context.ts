// What every part of a running sandbox shares: the pool, the clock, settings, faults and the logger.
import type pg from 'pg';
import type { SandboxFaults } from './faults.js';
import type { ModelLineage, SimulationSettings } from './simulator.js';

/** Structured logger shape (pino's `Logger` fits). */
export interface SandboxLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const SILENT_LOGGER: SandboxLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export interface WebhookRetryPolicy {
  /** Wait after the first failed attempt; doubles per failure, with jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Failed attempts after which an event is given up (status `failed`). */
  maxAttempts: number;
  /** Per delivery attempt. */
  timeoutMs: number;
}

export const DEFAULT_WEBHOOK_RETRY: WebhookRetryPolicy = {
  baseDelayMs: 1_000,
  maxDelayMs: 60_000,
  maxAttempts: 8,
  timeoutMs: 5_000,
};

export interface SandboxContext {
  pool: pg.Pool;
  seed: number;
  timeScale: number;
  publicUrl: string;
  simulation: SimulationSettings;
  webhookRetry: WebhookRetryPolicy;
  logger: SandboxLogger;
  faults: SandboxFaults;
  /** Seeded stream for fault and failure decisions. */
  random: () => number;
  lineages: Map<string, ModelLineage>;
  now(): Date;
}
