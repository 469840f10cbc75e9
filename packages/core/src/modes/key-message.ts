/**
 * A key as it travels in an engine's names and messages (exact mode's reset messages on a prefix's channel,
 * Redis's hash tags), one encoding for every engine and every node: a node of one version decodes what a node
 * of another published.
 */

// Code units that would end or empty the hash tag ('{', '}'), the escape character itself, and lone
// surrogates (UTF-8 has no encoding for them: every client writes U+FFFD, so '\uD800' and '\uDC00' would
// meet in one Redis key while staying two keys in memory).
const NEEDS_ESCAPE = /[%{}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ESCAPED = /%(?:7B|7D|25|u[0-9A-F]{4})/g;

function escapeUnit(unit: string): string {
  if (unit === '%') return '%25';
  if (unit === '{') return '%7B';
  if (unit === '}') return '%7D';
  return `%u${unit.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
}

function unescapeCode(code: string): string {
  if (code === '%25') return '%';
  if (code === '%7B') return '{';
  if (code === '%7D') return '}';
  return String.fromCharCode(Number.parseInt(code.slice(2), 16));
}

/**
 * A rate-limit key as an engine's names and messages hold it: the same string unless it holds `%`, `{`, `}`
 * or a lone surrogate, which are percent-escaped. The encoding is one-to-one (decodeIdentity inverts it),
 * holds no brace (a Redis hash tag's end), and is valid UTF-8, so distinct keys stay distinct on the wire. A
 * non-empty key encodes to a non-empty text, so '' on a limiter's channel names no key.
 * @example
 * await engine.publish(prefix, encodeIdentity(key)) // every node drops `key` from its deny caches
 */
export function encodeIdentity(key: string): string {
  // The common key needs nothing: one scan, no allocation.
  NEEDS_ESCAPE.lastIndex = 0;
  if (!NEEDS_ESCAPE.test(key)) return key;
  return key.replace(NEEDS_ESCAPE, escapeUnit);
}

/**
 * The key that encodeIdentity turned into `encoded`.
 * @example
 * decodeIdentity(message) // the key a reset message names
 */
export function decodeIdentity(encoded: string): string {
  return encoded.includes('%') ? encoded.replace(ESCAPED, unescapeCode) : encoded;
}
