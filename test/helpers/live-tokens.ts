// Finds live Slack syntax (`<!…>`, `<@…>`, `<url|label>`) in what the bot posts, except what the bot itself builds.

/** Hostile strings a person, the model or the platform may carry. */
export const HOSTILE = ['<!channel>', '<!here>', '<@U123>', '<https://evil.example|Open the report>', 'Q&A <b>'] as const;
export const HOSTILE_TEXT = HOSTILE.join(' ');

export interface LiveTokenRules {
  /** The one user the post may mention (the owner, mentioned by the bot). */
  ownerUserId?: string;
  /** Origins whose links the bot forms itself (the platform's web pages, Slack permalinks). */
  allowedOrigins?: readonly string[];
}

/** Every mrkdwn-parsed string of a message or view: top-level text, mrkdwn text objects, table raw_text cells. */
export function mrkdwnStrings(value: unknown): string[] {
  const out: string[] = [];
  const walk = (node: unknown, parentKey: string | undefined): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item, parentKey);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if ((o.type === 'mrkdwn' || o.type === 'raw_text') && typeof o.text === 'string') out.push(o.text);
    for (const [key, child] of Object.entries(o)) {
      if (key === 'value' || key === 'action_id' || key === 'metadata') continue;
      if (key === 'text' && typeof child === 'string' && parentKey === undefined && o.type === undefined) out.push(child);
      walk(child, key);
    }
  };
  walk(value, undefined);
  return out;
}

/** The `<…>` tokens Slack would parse in these strings that the rules do not allow. */
export function liveTokens(strings: readonly string[], rules: LiveTokenRules = {}): string[] {
  const bad: string[] = [];
  for (const s of strings) {
    for (const match of s.matchAll(/<([^<>]*)>/g)) {
      const inner = match[1]!;
      if (rules.ownerUserId && inner === `@${rules.ownerUserId}`) continue;
      if (/^#C[A-Z0-9]+$/.test(inner)) continue;
      if (/^!date\^\d+\^[^|]*\|[^<>]*$/.test(inner)) continue;
      if (/^https?:\/\//.test(inner)) {
        const url = inner.split('|')[0]!;
        if (rules.allowedOrigins?.some((origin) => url.startsWith(`${origin}/`))) continue;
      }
      bad.push(match[0]);
    }
  }
  return bad;
}

/** Live tokens in a posted message or a view (payload with `text` and/or `blocks`). */
export function liveTokensIn(payload: unknown, rules: LiveTokenRules = {}): string[] {
  return liveTokens(mrkdwnStrings(payload), rules);
}
