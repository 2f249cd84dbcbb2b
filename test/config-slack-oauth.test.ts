// The Slack OAuth variables: either one bot token or the four OAuth variables, each problem named.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, SLACK_BOT_SCOPES } from '../src/config.js';

const KEY_HEX = 'a'.repeat(64);
const oauth = {
  SLACK_CLIENT_ID: '123.456',
  SLACK_CLIENT_SECRET: 'client-secret',
  SLACK_STATE_SECRET: 'state-secret-of-some-length',
  SLACK_TOKEN_KEY: KEY_HEX,
  SLACK_SIGNING_SECRET: 'signing-secret',
  ANTHROPIC_API_KEY: 'k',
};

function problems(env: Record<string, string>): Record<string, string> {
  try {
    loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return Object.fromEntries(error.problems.map((p) => [p.variable, p.detail]));
  }
  throw new Error('expected a configuration error');
}

describe('Slack OAuth configuration', () => {
  it('runs without a bot token when the OAuth variables are set, with the manifest scopes by default', () => {
    const config = loadConfig(oauth);
    expect(config.slack.botToken).toBeUndefined();
    expect(config.slack.oauth).toMatchObject({ clientId: '123.456', clientSecret: 'client-secret', stateSecret: 'state-secret-of-some-length', scopes: [...SLACK_BOT_SCOPES] });
    expect(config.slack.oauth!.tokenKey.equals(Buffer.from(KEY_HEX, 'hex'))).toBe(true);
    expect(loadConfig({ ...oauth, SLACK_SCOPES: 'chat:write, app_mentions:read' }).slack.oauth!.scopes).toEqual(['chat:write', 'app_mentions:read']);
    expect(loadConfig({ ...oauth, SLACK_APP_TOKEN: 'xapp-1-abc' }).slack.socketMode).toBe(true);
  });

  it('takes the token key as base64 too, and refuses a key that is not 32 bytes', () => {
    const key = Buffer.alloc(32, 7);
    expect(loadConfig({ ...oauth, SLACK_TOKEN_KEY: key.toString('base64') }).slack.oauth!.tokenKey.equals(key)).toBe(true);
    expect(problems({ ...oauth, SLACK_TOKEN_KEY: 'short' }).SLACK_TOKEN_KEY).toMatch(/32 random bytes/);
    expect(problems({ ...oauth, SLACK_TOKEN_KEY: Buffer.alloc(16).toString('base64') }).SLACK_TOKEN_KEY).toMatch(/32 random bytes/);
  });

  it('names every missing OAuth variable, and refuses both modes at once', () => {
    const { SLACK_STATE_SECRET: _s, SLACK_TOKEN_KEY: _k, ...partial } = oauth;
    const missing = problems(partial);
    expect(Object.keys(missing).sort()).toEqual(['SLACK_STATE_SECRET', 'SLACK_TOKEN_KEY']);
    expect(missing.SLACK_TOKEN_KEY).toMatch(/encrypts the stored tokens/);
    expect(problems({ ...oauth, SLACK_BOT_TOKEN: 'xoxb-1' }).SLACK_BOT_TOKEN).toMatch(/both choose/);
    expect(problems({ ...oauth, SLACK_STATE_SECRET: 'short' }).SLACK_STATE_SECRET).toMatch(/at least 16/);
    const neither = problems({ SLACK_SIGNING_SECRET: 's', ANTHROPIC_API_KEY: 'k' });
    expect(neither.SLACK_BOT_TOKEN).toMatch(/is required.*SLACK_CLIENT_ID/);
  });
});
