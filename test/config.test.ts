import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { slackPace } from '../src/slack/limits.js';

const base = {
  SLACK_BOT_TOKEN: 'xoxb-test-token',
  SLACK_SIGNING_SECRET: 'signing-secret',
  ANTHROPIC_API_KEY: 'test-api-key',
};

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    return error as ConfigError;
  }
  throw new Error('expected a configuration error');
}

describe('loadConfig', () => {
  it('applies the documented defaults in HTTP mode', () => {
    const config = loadConfig(base);
    expect(config.slack.socketMode).toBe(false);
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.platform.apiUrl).toBeUndefined();
    expect(config.agent.model).toBe('claude-sonnet-4-5');
    expect(config.spending.adminUserIds).toEqual([]);
  });

  it('switches to Socket Mode when an app-level token is set, without a signing secret', () => {
    const config = loadConfig({ SLACK_BOT_TOKEN: 'xoxb-x', ANTHROPIC_API_KEY: 'k', SLACK_APP_TOKEN: 'xapp-1-abc' });
    expect(config.slack.socketMode).toBe(true);
  });

  it.each([
    [{ ...base, SLACK_BOT_TOKEN: '' }, 'SLACK_BOT_TOKEN'],
    [{ SLACK_BOT_TOKEN: 'xoxb-x', ANTHROPIC_API_KEY: 'k' }, 'SLACK_SIGNING_SECRET'],
    [{ ...base, ANTHROPIC_API_KEY: '  ' }, 'ANTHROPIC_API_KEY'],
    [{ ...base, PORT: 'eighty' }, 'PORT'],
    [{ ...base, DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ ...base, SLACK_APP_TOKEN: 'xoxb-wrong-kind' }, 'SLACK_APP_TOKEN'],
    [{ ...base, BENCHGEN_API_URL: 'https://bench.example', BENCHGEN_WEBHOOK_SECRET: 'whsec_x' }, 'BENCHGEN_API_TOKEN'],
    [{ ...base, BENCHGEN_API_URL: 'https://bench.example', BENCHGEN_API_TOKEN: 't' }, 'BENCHGEN_WEBHOOK_SECRET'],
    [{ ...base, AGENT_PRICES: '{"m":{"input":"free"}}' }, 'AGENT_PRICES'],
    [{ ...base, LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ ...base, PORT: '70000' }, 'PORT'],
    [{ ...base, PORT: '-1' }, 'PORT'],
    [{ ...base, RECONCILE_CRON: 'bad' }, 'RECONCILE_CRON'],
    [{ ...base, RECONCILE_CRON: '61 * * * *' }, 'RECONCILE_CRON'],
    [{ ...base, DATABASE_URL: 'localhost:5432/db' }, 'DATABASE_URL'],
    [{ ...base, DATABASE_URL: 'mysql://u:p@localhost/db' }, 'DATABASE_URL'],
    [{ ...base, BENCHMARKS_DIR: '/no/such/benchmarks/folder' }, 'BENCHMARKS_DIR'],
    [{ ...base, SLACK_PACE_SCALE: '0' }, 'SLACK_PACE_SCALE'],
    [{ ...base, SLACK_PACE_SCALE: 'fast' }, 'SLACK_PACE_SCALE'],
  ])('names the variable in one line: %#', (env, variable) => {
    const error = errorOf(env as Record<string, string>);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variable).toBe(variable);
    expect(error.message.startsWith(`Configuration error: ${variable} `)).toBe(true);
    expect(error.message).not.toContain('\n');
  });

  it('reports every problem at once, one line each naming its variable', () => {
    const error = errorOf({
      SLACK_BOT_TOKEN: 'xoxb-x',
      SLACK_SIGNING_SECRET: 's',
      PORT: '70000',
      RECONCILE_CRON: 'bad',
      DATABASE_URL: 'localhost:5432/db',
      LOG_LEVEL: 'loud',
      BENCHGEN_API_URL: 'https://bench.example',
    });
    expect(error.problems.map((p) => p.variable).sort()).toEqual(
      ['ANTHROPIC_API_KEY', 'BENCHGEN_API_TOKEN', 'BENCHGEN_WEBHOOK_SECRET', 'DATABASE_URL', 'LOG_LEVEL', 'PORT', 'RECONCILE_CRON'].sort(),
    );
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('Configuration errors (7):');
    for (const problem of error.problems) expect(lines).toContain(`  ${problem.variable} ${problem.detail}`);
    expect(error.message).toMatch(/RECONCILE_CRON must be a cron schedule of 5 or 6 fields/);
    expect(error.message).toMatch(/PORT must be a TCP port from 1 to 65535/);
  });

  it('accepts the edge values', () => {
    const config = loadConfig({ ...base, PORT: '65535', RECONCILE_CRON: '*/30 * * * * *', DATABASE_URL: 'postgresql://u:p@db.internal/verdict' });
    expect(config.port).toBe(65535);
    expect(config.reconcile.cron).toBe('*/30 * * * * *');
    expect(config.databaseUrl).toBe('postgresql://u:p@db.internal/verdict');
  });

  it("takes a Unix socket's folder as DATABASE_URL's host, as pg reads it, and refuses a URL with neither", () => {
    for (const url of ['postgres:///verdict?host=/var/run/postgresql', 'postgres://verdict:pw@localhost/verdict?host=/var/run/postgresql']) {
      expect(loadConfig({ ...base, DATABASE_URL: url }).databaseUrl).toBe(url);
    }
    expect(() => loadConfig({ ...base, DATABASE_URL: 'postgres:///verdict' })).toThrow(/DATABASE_URL must be a postgres:\/\/ URL with a host/);
    expect(() => loadConfig({ ...base, DATABASE_URL: 'postgres:///verdict?host=relative' })).toThrow(/DATABASE_URL/);
  });

  it('paces Slack writes at Slack\'s documented pace unless SLACK_PACE_SCALE says otherwise', () => {
    expect(loadConfig(base).slack.paceScale).toBe(1);
    expect(slackPace(loadConfig(base).slack.paceScale)).toEqual({ postIntervalMs: 1000, planUpdateIntervalMs: 3000, workspaceUpdateIntervalMs: 1500, sessionStatusIntervalMs: 1200 });
    expect(slackPace(loadConfig({ ...base, SLACK_PACE_SCALE: '0.1' }).slack.paceScale)).toEqual({ postIntervalMs: 100, planUpdateIntervalMs: 300, workspaceUpdateIntervalMs: 150, sessionStatusIntervalMs: 120 });
  });

  it('resolves BENCHMARKS_DIR to an absolute folder, unset by default', () => {
    expect(loadConfig(base).engines.benchmarksDir).toBeUndefined();
    expect(loadConfig({ ...base, BENCHMARKS_DIR: 'test' }).engines.benchmarksDir).toBe(path.resolve('test'));
  });

  it('parses lists and price overrides', () => {
    const config = loadConfig({
      ...base,
      ADMIN_USER_IDS: 'U1, U2 ,,U3',
      AGENT_PRICES: '{"my-model":{"input":2,"output":8}}',
      SPEND_CONFIRM_THRESHOLD: '50',
    });
    expect(config.spending.adminUserIds).toEqual(['U1', 'U2', 'U3']);
    expect(config.spending.confirmThreshold).toBe(50);
    expect(config.agent.priceOverrides['my-model']).toEqual({ input: 2, output: 8, cacheWrite: 2.5, cacheRead: 0.2 });
  });
});
