// Request signing as the senders do it: Slack's v0 signature, and Standard Webhooks' v1 signature.
import { createHmac } from 'node:crypto';

/** The User-Agent Slack sends with events and interactivity payloads. */
export const SLACK_USER_AGENT = 'Slackbot 1.0 (+https://api.slack.com/robots)';

/** Computes Slack's request signature: `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<body>`. */
export function signSlackRequest(secret: string, timestamp: number, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
}

/** The headers of a JSON body signed as Slack signs it now (for load generators that post raw bodies). */
export function slackHeaders(secret: string, body: string): Record<string, string> {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/json',
    'x-slack-request-timestamp': String(timestamp),
    'x-slack-signature': signSlackRequest(secret, timestamp, body),
    'user-agent': SLACK_USER_AGENT,
  };
}

/**
 * Standard Webhooks' signature, computed here independently of the bot's own signer:
 * `v1,` + base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, keyed by the base64 part of a `whsec_` secret.
 */
export function signStandardWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}
