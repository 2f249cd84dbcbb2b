// The bot's environment pointed at the fakes, with fresh secrets: what the harness and the benches start it with.
import { randomBytes } from 'node:crypto';

export interface FakesEnvInput {
  slackApiUrl: string;
  anthropicUrl: string;
  /** Unset: the bot starts its own embedded PostgreSQL. */
  databaseUrl?: string;
  dataDir: string;
  port?: number;
}

/** Environment of a bot in HTTP mode on the fake Slack and the scripted model, with the sandbox platform 100 times faster. */
export function fakesEnv(input: FakesEnvInput): Record<string, string> {
  return {
    SLACK_BOT_TOKEN: `xoxb-test-${randomBytes(8).toString('hex')}`,
    SLACK_SIGNING_SECRET: randomBytes(16).toString('hex'),
    SLACK_API_URL: input.slackApiUrl,
    ANTHROPIC_API_KEY: `test-key-${randomBytes(8).toString('hex')}`,
    ANTHROPIC_BASE_URL: input.anthropicUrl,
    AGENT_MODEL: 'claude-sonnet-4-5',
    AGENT_MAX_RETRIES: '2',
    ...(input.databaseUrl ? { DATABASE_URL: input.databaseUrl } : {}),
    DATA_DIR: input.dataDir,
    PORT: String(input.port ?? 0),
    SANDBOX_TIME_SCALE: '0.01',
    RECONCILE_OVERDUE_SECONDS: '3600',
    LOG_LEVEL: 'info',
  };
}
