// The model reads what Slack can carry and no more: the agent's input caps restate Slack's limits.
import { describe, expect, it } from 'vitest';
import { boundInbound, INBOUND_LIMITS } from '../../src/agent/input-limits.js';
import { INBOUND_LIMITS as SLACK_INBOUND } from '../../src/slack/limits.js';

describe('input limits', () => {
  it('equal the Slack limits they restate', () => {
    expect(INBOUND_LIMITS.messageText).toBe(SLACK_INBOUND.messageText);
    expect(INBOUND_LIMITS.buttonValue).toBe(SLACK_INBOUND.buttonValue);
    expect(INBOUND_LIMITS.buttonLabel).toBe(SLACK_INBOUND.buttonLabel);
  });

  it('cut text beyond the cap and say how much was cut', () => {
    expect(boundInbound('abc', 3)).toBe('abc');
    expect(boundInbound('abcdef', 4)).toBe('abcd\n[… 2 more characters cut: the bot reads at most 4]');
  });
});
