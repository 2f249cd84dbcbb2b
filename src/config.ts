// Environment configuration, validated once at start-up with zod.
import cron from 'node-cron';
import { z } from 'zod';
import { DEFAULT_MODEL, parsePriceOverrides, type ModelPrices } from './agent/pricing.js';
import {
  ConfigError,
  optionalString,
  positiveInt,
  positiveNumber,
  problemsOf,
  url,
  type ConfigProblem,
} from '@verdict/contract/env';
import { ENGINE_ENV, engineConfig, engineProblems, type EngineConfig } from '@verdict/platform/config';

export { ConfigError } from '@verdict/contract/env';

const postgresUrl = optionalString.refine(
  (value) => {
    if (value === undefined) return true;
    if (!URL.canParse(value)) return false;
    const parsed = new URL(value);
    // A host, or a Unix socket's folder, which pg takes from `host` over the URL's host:
    // postgres:///verdict?host=/var/run/postgresql, postgres://user:password@localhost/verdict?host=/var/run/postgresql
    const socket = parsed.searchParams.get('host')?.startsWith('/') ?? false;
    return (parsed.protocol === 'postgres:' || parsed.protocol === 'postgresql:') && (parsed.hostname !== '' || socket);
  },
  { message: 'must be a postgres:// URL with a host, e.g. postgres://user:password@localhost:5432/verdict, or a Unix socket folder in host=, e.g. postgres://user:password@localhost/verdict?host=/var/run/postgresql' },
);

const port = (fallback: number) =>
  optionalString
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .refine((value) => Number.isInteger(value) && value >= 0 && value <= 65535, {
      message: 'must be a TCP port from 1 to 65535 (0 picks a free one)',
    });

const cronSchedule = (fallback: string) =>
  optionalString
    .transform((value) => value ?? fallback)
    .refine((value) => cron.validate(value), {
      message: 'must be a cron schedule of 5 or 6 fields, e.g. "* * * * *" (every minute) or "*/30 * * * * *" (every 30 s)',
    });

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** What one process runs: both roles under one parent (`npm start`), or one role alone. */
export const ROLES = ['all', 'web', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Set by the parent of `npm start` on its worker child only (not a user setting): that worker hosts
 * the sandbox platform, on this port, sending its webhooks to this URL.
 */
export const SANDBOX_HOST_ENV = 'VERDICT_SANDBOX_HOST';

const sandboxHost = optionalString.transform((value, ctx) => {
  if (value === undefined) return undefined;
  try {
    const parsed = JSON.parse(value) as { port?: unknown; webhookUrl?: unknown };
    if (Number.isInteger(parsed.port) && typeof parsed.webhookUrl === 'string' && URL.canParse(parsed.webhookUrl)) {
      return { port: parsed.port as number, webhookUrl: parsed.webhookUrl };
    }
  } catch {
    // reported below
  }
  ctx.addIssue({ code: 'custom', message: 'is set by the parent process of npm start only: unset it' });
  return z.NEVER;
});

/** The bot token scopes an OAuth install asks for: manifest.yml's `oauth_config.scopes.bot`. */
export const SLACK_BOT_SCOPES = ['app_mentions:read', 'channels:history', 'groups:history', 'chat:write', 'im:write', 'files:write', 'files:read', 'assistant:write'] as const;

/**
 * The Slack OAuth variables: set SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_STATE_SECRET and
 * SLACK_TOKEN_KEY instead of SLACK_BOT_TOKEN to install the bot in any workspace (src/slack/oauth.ts).
 */
const SLACK_OAUTH_ENV = {
  SLACK_CLIENT_ID: optionalString,
  SLACK_CLIENT_SECRET: optionalString,
  SLACK_STATE_SECRET: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'must be at least 16 characters (a random secret that signs the OAuth state, e.g. openssl rand -hex 32)',
  }),
  SLACK_TOKEN_KEY: optionalString.transform((v, ctx) => {
    if (v === undefined) return undefined;
    if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, 'hex');
    if (/^[A-Za-z0-9+/]{43}=?$/.test(v)) return Buffer.from(v, 'base64');
    ctx.addIssue({ code: 'custom', message: 'must be 32 random bytes as 64 hex digits or as base64 (the key that encrypts stored tokens), e.g. openssl rand -hex 32' });
    return z.NEVER;
  }),
  SLACK_SCOPES: optionalString.transform((v) => (v === undefined ? [...SLACK_BOT_SCOPES] : v.split(',').map((s) => s.trim()).filter(Boolean))),
};

/** One mode or the other: a bot token (one workspace), or the OAuth variables (any workspace). */
function slackAuthProblems(env: {
  SLACK_BOT_TOKEN?: string | undefined;
  SLACK_CLIENT_ID?: string | undefined;
  SLACK_CLIENT_SECRET?: string | undefined;
  SLACK_STATE_SECRET?: string | undefined;
  SLACK_TOKEN_KEY?: Buffer | undefined;
}): ConfigProblem[] {
  const oauth = ['SLACK_CLIENT_ID', 'SLACK_CLIENT_SECRET', 'SLACK_STATE_SECRET', 'SLACK_TOKEN_KEY'] as const;
  const set = oauth.filter((v) => env[v] !== undefined);
  if (set.length === 0) {
    return env.SLACK_BOT_TOKEN
      ? []
      : [{ variable: 'SLACK_BOT_TOKEN', detail: 'is required: the bot token (xoxb-...) from your Slack app\'s "OAuth & Permissions" page (or set SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_STATE_SECRET and SLACK_TOKEN_KEY to install the bot in any workspace)' }];
  }
  if (env.SLACK_BOT_TOKEN) {
    return [{ variable: 'SLACK_BOT_TOKEN', detail: `and ${set.join(', ')} both choose how the bot gets its tokens: unset SLACK_BOT_TOKEN to install through /slack/install, or unset ${set.join(', ')} for one workspace` }];
  }
  const why: Record<(typeof oauth)[number], string> = {
    SLACK_CLIENT_ID: 'the Client ID from "Basic Information" in your Slack app',
    SLACK_CLIENT_SECRET: 'the Client Secret from "Basic Information" in your Slack app',
    SLACK_STATE_SECRET: 'a random secret that signs the OAuth state, e.g. openssl rand -hex 32',
    SLACK_TOKEN_KEY: 'the key that encrypts the stored tokens, e.g. openssl rand -hex 32',
  };
  return oauth.filter((v) => env[v] === undefined).map((variable) => ({ variable, detail: `is required to install through /slack/install: ${why[variable]}` }));
}

const EnvSchema = z
  .object({
    SLACK_BOT_TOKEN: optionalString,
    ...SLACK_OAUTH_ENV,
    SLACK_APP_TOKEN: optionalString,
    SLACK_SIGNING_SECRET: optionalString,
    SLACK_API_URL: url('Slack Web API base, e.g. https://slack.com/api/'),
    ANTHROPIC_API_KEY: optionalString.refine((v) => v !== undefined, {
      message: 'is required: an API key for the Messages API (set ANTHROPIC_BASE_URL for a compatible endpoint)',
    }),
    ANTHROPIC_BASE_URL: url('Messages API base URL'),
    AGENT_MODEL: optionalString.transform((v) => v ?? DEFAULT_MODEL),
    AGENT_PRICES: optionalString,
    AGENT_MAX_RETRIES: positiveInt(4),
    AGENT_TIMEOUT_MS: positiveInt(120_000),
    AGENT_EVENT_RETRY_ATTEMPTS: positiveInt(8),
    DATABASE_URL: postgresUrl,
    DATA_DIR: optionalString,
    BENCHGEN_API_URL: url('platform API base URL'),
    BENCHGEN_API_TOKEN: optionalString,
    BENCHGEN_WEBHOOK_SECRET: optionalString,
    PUBLIC_URL: url('public base URL of this bot, used to register the webhook'),
    SANDBOX_TIME_SCALE: positiveNumber(1),
    SLACK_PACE_SCALE: optionalString
      .transform((value) => (value === undefined ? 1 : Number(value)))
      .refine((value) => Number.isFinite(value) && value > 0, { message: 'must be a number above 0 (1 is Slack\'s documented pace)' }),
    PORT: port(3000),
    WORKER_CONCURRENCY: positiveInt(8),
    SPEND_CONFIRM_THRESHOLD: positiveNumber(200),
    CHAT_BUDGET: positiveNumber(1000),
    SPEND_CAP_PERSON: positiveNumber(2000),
    SPEND_CAP_WORKSPACE: positiveNumber(10000),
    SPEND_CAP_DAYS: positiveInt(7),
    ADMIN_USER_IDS: optionalString,
    RECONCILE_CRON: cronSchedule('* * * * *'),
    RECONCILE_OVERDUE_SECONDS: positiveNumber(120),
    WORKER_STALE_SECONDS: positiveNumber(30),
    // A refinement, not z.enum, for the same reason as LOG_LEVEL below.
    ROLE: optionalString
      .transform((v) => v ?? 'all')
      .refine((v) => (ROLES as readonly string[]).includes(v), {
        message: 'must be all (the web and worker roles as two processes under one parent: npm start), web (Slack events, webhooks, /healthz) or worker (turns and sweeps)',
      }),
    [SANDBOX_HOST_ENV]: sandboxHost,
    ...ENGINE_ENV,
    // A refinement, not z.enum: a failed enum stops zod before the cross-variable checks below run.
    LOG_LEVEL: optionalString
      .transform((v) => v ?? 'info')
      .refine((v) => LOG_LEVELS.includes(v), { message: `must be one of ${LOG_LEVELS.join(', ')}` }),
  })
  .superRefine((env, ctx) => {
    if (!env.SLACK_APP_TOKEN && !env.SLACK_SIGNING_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['SLACK_SIGNING_SECRET'],
        message:
          'is required in HTTP mode (no SLACK_APP_TOKEN): copy it from "Basic Information" in your Slack app, or set SLACK_APP_TOKEN for Socket Mode',
      });
    }
    if (env.SLACK_APP_TOKEN && !env.SLACK_APP_TOKEN.startsWith('xapp-')) {
      ctx.addIssue({ code: 'custom', path: ['SLACK_APP_TOKEN'], message: 'must be an app-level token starting with xapp-' });
    }
    if (env.BENCHGEN_API_URL && !env.BENCHGEN_API_TOKEN) {
      ctx.addIssue({ code: 'custom', path: ['BENCHGEN_API_TOKEN'], message: 'is required when BENCHGEN_API_URL is set' });
    }
    if (env.BENCHGEN_API_URL && !env.BENCHGEN_WEBHOOK_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['BENCHGEN_WEBHOOK_SECRET'],
        message: 'is required when BENCHGEN_API_URL is set (the whsec_... secret the platform signs webhooks with)',
      });
    }
    // A role started alone shares the Postgres and the platform of the others: it starts neither.
    const alone = env.ROLE === 'web' || env.ROLE === 'worker';
    const supervisedSandbox = env.ROLE === 'worker' && env[SANDBOX_HOST_ENV] !== undefined;
    if (alone && !env.DATABASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['DATABASE_URL'],
        message: `is required with ROLE=${env.ROLE}: roles started alone share one PostgreSQL (only npm start, ROLE=all, starts an embedded one)`,
      });
    }
    if (env.ROLE === 'worker' && !env.BENCHGEN_API_URL && !supervisedSandbox) {
      ctx.addIssue({
        code: 'custom',
        path: ['BENCHGEN_API_URL'],
        message:
          'is required with ROLE=worker: a worker started alone does not run the sandbox platform (npm start runs it in its own worker); run the platform on its own (e.g. npm run sandbox) and give every role BENCHGEN_API_URL, BENCHGEN_API_TOKEN and BENCHGEN_WEBHOOK_SECRET',
      });
    }
    if (env.ROLE === 'web' && !env.BENCHGEN_WEBHOOK_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['BENCHGEN_WEBHOOK_SECRET'],
        message: "is required with ROLE=web: the web role verifies the platform's webhooks with it (the same whsec_... secret the platform signs with)",
      });
    }
    if (env[SANDBOX_HOST_ENV] !== undefined && env.ROLE !== 'worker') {
      ctx.addIssue({ code: 'custom', path: [SANDBOX_HOST_ENV], message: 'is set by the parent process of npm start for its worker only: unset it' });
    }
    for (const problem of [...slackAuthProblems(env), ...engineProblems(env)]) {
      ctx.addIssue({ code: 'custom', path: [problem.variable], message: problem.detail });
    }
    if (env.AGENT_PRICES) {
      try {
        parsePriceOverrides(env.AGENT_PRICES);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['AGENT_PRICES'], message: (error as Error).message });
      }
    }
  });

export interface SlackOAuthConfig {
  clientId: string;
  clientSecret: string;
  stateSecret: string;
  /** AES-256 key that encrypts the stored tokens. */
  tokenKey: Buffer;
  scopes: string[];
}

export interface Config {
  slack: {
    /** Single-workspace mode; undefined when the bot is installed through OAuth (`oauth`). */
    botToken: string | undefined;
    /** Installs through Slack's OAuth v2 flow, one token per workspace (src/slack/oauth.ts); undefined with a bot token. */
    oauth: SlackOAuthConfig | undefined;
    appToken: string | undefined;
    signingSecret: string | undefined;
    apiUrl: string | undefined;
    socketMode: boolean;
    /** The bot's pace of Slack writes, as a multiple of Slack's documented pace (SLACK_PACE_SCALE). */
    paceScale: number;
  };
  agent: {
    apiKey: string;
    baseUrl: string | undefined;
    model: string;
    priceOverrides: Record<string, ModelPrices>;
    maxRetries: number;
    timeoutMs: number;
    eventRetryAttempts: number;
  };
  databaseUrl: string | undefined;
  dataDir: string;
  /** DATA_DIR was set: the embedded database then stays under it, never moved (src/store/embedded-postgres.ts). */
  dataDirSet: boolean;
  platform: {
    apiUrl: string | undefined;
    apiToken: string | undefined;
    webhookSecret: string | undefined;
    sandboxTimeScale: number;
  };
  publicUrl: string | undefined;
  port: number;
  workerConcurrency: number;
  spending: {
    confirmThreshold: number;
    chatBudget: number;
    /** Credits one person (over the threads they started) may spend per period without an Approve click. */
    personCap: number;
    /** Credits the whole workspace may spend per period without an Approve click. */
    workspaceCap: number;
    capPeriodDays: number;
    adminUserIds: string[];
  };
  reconcile: { cron: string; overdueSeconds: number };
  workerStaleSeconds: number;
  /** `all` = both roles (as separate processes under `npm start`, or in one process with startBot). */
  role: Role;
  /** Set only on the worker child of `npm start` that hosts the sandbox platform. */
  sandboxHost: { port: number; webhookUrl: string } | undefined;
  /** Where runs go: unset (neither MODELS_DIR nor INFERENCE_URL) = the simulator. */
  engines: EngineConfig;
  logLevel: string;
}

/** Reads and validates the environment. Throws {@link ConfigError} listing every problem found. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(problemsOf(parsed.error.issues));
  }
  const e = parsed.data;
  return {
    slack: {
      botToken: e.SLACK_BOT_TOKEN,
      oauth: e.SLACK_CLIENT_ID
        ? { clientId: e.SLACK_CLIENT_ID, clientSecret: e.SLACK_CLIENT_SECRET!, stateSecret: e.SLACK_STATE_SECRET!, tokenKey: e.SLACK_TOKEN_KEY!, scopes: e.SLACK_SCOPES }
        : undefined,
      appToken: e.SLACK_APP_TOKEN,
      signingSecret: e.SLACK_SIGNING_SECRET,
      apiUrl: e.SLACK_API_URL,
      socketMode: e.SLACK_APP_TOKEN !== undefined,
      paceScale: e.SLACK_PACE_SCALE,
    },
    agent: {
      apiKey: e.ANTHROPIC_API_KEY!,
      baseUrl: e.ANTHROPIC_BASE_URL,
      model: e.AGENT_MODEL,
      priceOverrides: e.AGENT_PRICES ? parsePriceOverrides(e.AGENT_PRICES) : {},
      maxRetries: e.AGENT_MAX_RETRIES,
      timeoutMs: e.AGENT_TIMEOUT_MS,
      eventRetryAttempts: Math.max(1, e.AGENT_EVENT_RETRY_ATTEMPTS),
    },
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR ?? '.data',
    dataDirSet: e.DATA_DIR !== undefined,
    platform: {
      apiUrl: e.BENCHGEN_API_URL,
      apiToken: e.BENCHGEN_API_TOKEN,
      webhookSecret: e.BENCHGEN_WEBHOOK_SECRET,
      sandboxTimeScale: e.SANDBOX_TIME_SCALE,
    },
    publicUrl: e.PUBLIC_URL,
    port: e.PORT,
    workerConcurrency: Math.max(1, e.WORKER_CONCURRENCY),
    spending: {
      confirmThreshold: e.SPEND_CONFIRM_THRESHOLD,
      chatBudget: e.CHAT_BUDGET,
      personCap: e.SPEND_CAP_PERSON,
      workspaceCap: e.SPEND_CAP_WORKSPACE,
      capPeriodDays: e.SPEND_CAP_DAYS,
      adminUserIds: (e.ADMIN_USER_IDS ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    reconcile: { cron: e.RECONCILE_CRON, overdueSeconds: e.RECONCILE_OVERDUE_SECONDS },
    workerStaleSeconds: e.WORKER_STALE_SECONDS,
    role: e.ROLE as Role,
    sandboxHost: e[SANDBOX_HOST_ENV],
    engines: engineConfig(e),
    logLevel: e.LOG_LEVEL,
  };
}
