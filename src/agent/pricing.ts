// Prices of model usage per million tokens, and the exact USD cost of a turn's token usage.
import { z } from 'zod';

export const DEFAULT_MODEL = 'claude-sonnet-4-5';

/** USD per million tokens. Cache writes are the 5-minute cache price. */
export interface ModelPrices {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export const ZERO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };

/** List prices (USD per MTok) of the models the bot is expected to run on; override with AGENT_PRICES. */
export const DEFAULT_PRICES: Record<string, ModelPrices> = {
  'claude-sonnet-4-5': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-sonnet-4': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-opus-4-5': { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  'claude-opus-4-1': { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  'claude-haiku-4-5': { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 },
};

const PriceSchema = z.object({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cacheWrite: z.number().nonnegative().optional(),
  cacheRead: z.number().nonnegative().optional(),
});

/**
 * Parses AGENT_PRICES: JSON mapping a model id to `{input, output, cacheWrite?, cacheRead?}` in USD per
 * million tokens. Missing cache prices follow Anthropic's ratios (write 1.25x input, read 0.1x input).
 */
export function parsePriceOverrides(json: string): Record<string, ModelPrices> {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('must be JSON like {"claude-sonnet-4-5":{"input":3,"output":15}}');
  }
  const parsed = z.record(z.string(), PriceSchema).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`has an invalid price at ${issue.path.join('.')}: ${issue.message}`);
  }
  const out: Record<string, ModelPrices> = {};
  for (const [model, p] of Object.entries(parsed.data)) {
    out[model] = {
      input: p.input,
      output: p.output,
      cacheWrite: p.cacheWrite ?? p.input * 1.25,
      cacheRead: p.cacheRead ?? p.input * 0.1,
    };
  }
  return out;
}

/**
 * Finds the prices for a model id: an exact match first, then the longest table key that prefixes
 * the id (so `claude-sonnet-4-5-20250929` uses `claude-sonnet-4-5`). Returns undefined when unknown.
 */
export function pricesFor(model: string, overrides: Record<string, ModelPrices> = {}): ModelPrices | undefined {
  const table = { ...DEFAULT_PRICES, ...overrides };
  if (table[model]) return table[model];
  const key = Object.keys(table)
    .filter((k) => model.startsWith(k))
    .sort((a, b) => b.length - a.length)[0];
  return key ? table[key] : undefined;
}

const SCALE = 10_000n; // prices carry at most 4 decimals

function scaledPrice(price: number): bigint {
  return BigInt(Math.round(price * Number(SCALE)));
}

/**
 * Exact cost in USD of some token usage, as a decimal string with 10 decimals (stored as numeric).
 * Unknown models cost "0.0000000000"; callers log that the price is missing.
 */
export function costUsd(usage: TokenUsage, prices: ModelPrices | undefined): string {
  if (!prices) return '0.0000000000';
  const total =
    BigInt(usage.inputTokens) * scaledPrice(prices.input) +
    BigInt(usage.outputTokens) * scaledPrice(prices.output) +
    BigInt(usage.cacheWriteTokens) * scaledPrice(prices.cacheWrite) +
    BigInt(usage.cacheReadTokens) * scaledPrice(prices.cacheRead);
  // total is USD * 1e6 (per MTok) * 1e4 (scale) = USD * 1e10
  const whole = total / 10_000_000_000n;
  const frac = (total % 10_000_000_000n).toString().padStart(10, '0');
  return `${whole}.${frac}`;
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  };
}
