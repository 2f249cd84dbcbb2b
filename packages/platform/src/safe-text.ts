// Text a model or a file may hold that Postgres cannot store as it is (NUL, lone surrogates), made storable and shown escaped.

/** A UTF-16 surrogate without its pair: not a character; Postgres would get U+FFFD for it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Why a text cannot be stored as it is (Postgres text holds no NUL; a lone surrogate is no character), or null. */
export function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  LONE_SURROGATE.lastIndex = 0;
  if (LONE_SURROGATE.test(text)) return 'contains a lone surrogate (half of a UTF-16 pair), which is not a character';
  return null;
}

export interface StorableText {
  /** The text with each NUL shown as `\u0000` and each lone surrogate as `\udXXX`: storable and readable. */
  text: string;
  /** The exact original as a JSON string literal when `text` differs from it (null otherwise): nothing is lost. */
  exact: string | null;
}

/**
 * Makes any string a model returned storable in a Postgres text column. Everything else (invalid
 * UTF-8 already decoded to U+FFFD by the HTTP client, control characters, 100 kB of text) is stored
 * as it is. JSON.stringify escapes NUL and lone surrogates, so `exact` is always storable.
 */
export function storableText(text: string): StorableText {
  if (unstorableText(text) === null) return { text, exact: null };
  const shown = text
    .replaceAll('\u0000', '\\u0000')
    .replace(LONE_SURROGATE, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return { text: shown, exact: JSON.stringify(text) };
}
