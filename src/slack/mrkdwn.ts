// Slack mrkdwn for text the bot did not write: one escaping function, and the only mentions and links posts carry.
import { truncate } from './limits.js';

const SLACK_ID = /^[A-Z0-9]{2,40}$/;
const SAFE_URL = /^https?:\/\/[^\s|<>]+$/;
const URL_MAX = 1000;

/**
 * Escapes Slack's three control characters (`&`, `<`, `>`, per Slack's "formatting text" guide) so
 * that text from a person, the model or the platform shows literally: no `<!channel>`, no
 * `<@U…>`, no `<url|label>` survives as live syntax.
 */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A user mention built by the bot; an id that is not a Slack user id is shown as escaped text. */
export function mentionUser(userId: string): string {
  return /^[UW]/.test(userId) && SLACK_ID.test(userId) ? `<@${userId}>` : escapeMrkdwn(userId);
}

/** A channel link built by the bot; anything but a channel id is shown as escaped text. */
export function mentionChannel(channelId: string): string {
  return /^[CGD]/.test(channelId) && SLACK_ID.test(channelId) ? `<#${channelId}>` : escapeMrkdwn(channelId);
}

/** A link the bot forms itself: an http(s) URL without Slack syntax in it, and an escaped label; otherwise the label alone. */
export function link(url: string | null | undefined, label: string): string {
  const safeLabel = escapeMrkdwn(label);
  if (!url || url.length > URL_MAX || !SAFE_URL.test(url)) return safeLabel;
  return `<${url}|${safeLabel}>`;
}

/**
 * Renders what the model wrote (common Markdown) as mrkdwn, escaping all of it. The rule for
 * mentions: the model's text carries none of its own; an exact mention of `ownerUserId` (the person
 * the post is addressed to, whom the bot mentions anyway) is kept as the bot's own mention, every
 * other `<…>` is shown literally. Markdown links become "label (url)", so no label can hide where
 * a link points; Slack links the bare URL itself.
 */
export function fromModelMarkdown(markdown: string, options: { ownerUserId?: string } = {}): string {
  const owner = options.ownerUserId && mentionUser(options.ownerUserId).startsWith('<@') ? options.ownerUserId : undefined;
  const PLACEHOLDER = '\uE000';
  let text = markdown.replace(/\uE000/g, '');
  if (owner) text = text.replace(new RegExp(`<@${owner}(?:\\|[^>]*)?>`, 'g'), PLACEHOLDER);
  text = text.replace(/\[([^\]\n]+)\]\((https?:[^)\s]+)\)/g, (_, label: string, url: string) => (label === url ? url : `${label} (${url})`));
  text = escapeMrkdwn(text)
    .replace(/\*\*(.+?)\*\*/g, '*$1*')
    .replace(/^#{1,6}\s+(.+)$/gm, '*$1*');
  return owner ? text.split(PLACEHOLDER).join(mentionUser(owner)) : text;
}

/** Cuts mrkdwn to `max` characters without leaving half of a `<…>` token or of an `&…;` entity. */
export function truncateMrkdwn(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = truncate(text, max);
  const open = cut.lastIndexOf('<');
  if (open > cut.lastIndexOf('>')) cut = `${cut.slice(0, open).trimEnd()}…`;
  const amp = cut.lastIndexOf('&');
  if (amp > cut.lastIndexOf(';') && /^&[a-z]{0,3}…?$/.test(cut.slice(amp))) cut = `${cut.slice(0, amp).trimEnd()}…`;
  return cut;
}
