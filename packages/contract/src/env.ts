// Reading environment variables, as both the bot and the platform do: zod readers for the usual
// kinds of value, and one error listing every problem, each naming its variable.
import fs from 'node:fs';
import { z } from 'zod';

/** A string variable; unset and blank are both undefined, and the value is trimmed. */
export const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));


/** An absolute URL, or unset; `what` says what it is for. */
export const url = (what: string) =>
  optionalString.refine((value) => value === undefined || URL.canParse(value), {
    message: `must be an absolute URL (${what})`,
  });


/** A non-negative number, `fallback` when unset. */
export const positiveNumber = (fallback: number) =>
  optionalString
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .refine((value) => Number.isFinite(value) && value >= 0, { message: 'must be a non-negative number' });


/** A non-negative integer, `fallback` when unset. */
export const positiveInt = (fallback: number) =>
  optionalString
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .refine((value) => Number.isInteger(value) && value >= 0, { message: 'must be a non-negative integer' });


/** A JSON object of strings (Ray's own `RAY_JOB_HEADERS` format: `{"Authorization": "Bearer ..."}`). */
export const jsonStrings = (example: string) =>
  optionalString
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        parsed = null;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.values(parsed).every((v) => typeof v === 'string')) {
        ctx.addIssue({ code: 'custom', message: `must be a JSON object of strings, e.g. ${example}` });
        return z.NEVER;
      }
      return parsed as Record<string, string>;
    });

/** A JSON object of non-negative numbers (Ray's `entrypoint_resources`). */
export const jsonNumbers = (example: string) =>
  optionalString
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        parsed = null;
      }
      if (
        parsed === null ||
        typeof parsed !== 'object' ||
        Array.isArray(parsed) ||
        !Object.values(parsed).every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0)
      ) {
        ctx.addIssue({ code: 'custom', message: `must be a JSON object of non-negative numbers, e.g. ${example}` });
        return z.NEVER;
      }
      return parsed as Record<string, number>;
    });

/** Whether `value` names an existing folder. */
export function isFolder(value: string): boolean {
  try {
    return fs.statSync(value).isDirectory();
  } catch {
    return false;
  }
}

export interface ConfigProblem {
  variable: string;
  detail: string;
}

/**
 * Thrown for missing or invalid variables. The message is one line per problem, each naming its
 * variable and what to do; `variable` is the first one named.
 */
export class ConfigError extends Error {
  readonly variable: string;
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[]) {
    const lines = problems.map((p) => `${p.variable} ${p.detail}`);
    super(lines.length === 1 ? `Configuration error: ${lines[0]}` : `Configuration errors (${lines.length}):\n  ${lines.join('\n  ')}`);
    this.name = 'ConfigError';
    this.variable = problems[0]?.variable ?? 'environment';
    this.problems = problems;
  }
}

/** One problem per variable (the first zod found): a value that fails two checks is one line. */
export function problemsOf(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): ConfigProblem[] {
  const byVariable = new Map<string, ConfigProblem>();
  for (const issue of issues) {
    const variable = String(issue.path[0] ?? 'environment');
    if (!byVariable.has(variable)) byVariable.set(variable, { variable, detail: issue.message });
  }
  return [...byVariable.values()];
}
