/**
 * Lossless text for what the engine stores: the algorithms' states, bans, lessees and fleets are JS values
 * (objects, arrays, Maps, numbers that may be Infinity, NaN or -0, fields that may be undefined), and keys are
 * any JS string. JSON alone drops non-finite numbers, -0, undefined and Maps, and PostgreSQL's text holds no
 * NUL nor a lone surrogate: both are encoded here, and decoding gives back the same value bit for bit.
 */

/** A tagged value: `{ "$": tag, "v": ... }`; a plain object with a "$" field of its own is tagged 'o'. */
type Tagged = { readonly $: 'n' | 'u' | 'm' | 'o'; readonly v?: unknown };

function encodeValue(value: unknown): unknown {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && !Object.is(value, -0)) return value;
    return { $: 'n', v: Object.is(value, -0) ? '-0' : String(value) };
  }
  if (value === undefined) return { $: 'u' };
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(encodeValue);
  if (value instanceof Map) return { $: 'm', v: [...value].map(([k, v]) => [encodeValue(k), encodeValue(v)]) };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = encodeValue(v);
  return Object.hasOwn(out, '$') ? { $: 'o', v: out } : out;
}

function decodeValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(decodeValue);
  const object = value as Record<string, unknown>;
  if (typeof object.$ === 'string') {
    const tagged = object as Tagged;
    switch (tagged.$) {
      case 'n':
        return tagged.v === '-0' ? -0 : Number(tagged.v);
      case 'u':
        return undefined;
      case 'm':
        return new Map((tagged.v as [unknown, unknown][]).map(([k, v]) => [decodeValue(k), decodeValue(v)]));
      case 'o':
        return decodeFields(tagged.v as Record<string, unknown>);
    }
  }
  return decodeFields(object);
}

function decodeFields(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(object)) out[k] = decodeValue(v);
  return out;
}

/**
 * A stored value's text: JSON of the value with what JSON cannot hold tagged (and JSON.stringify escapes NUL
 * and lone surrogates, so the text is valid for a PostgreSQL text column).
 * @example
 * encode({ tokens: Number.NEGATIVE_INFINITY }) // '{"tokens":{"$":"n","v":"-Infinity"}}'
 */
export function encode(value: unknown): string {
  return JSON.stringify(encodeValue(value));
}

/** The value `encode` wrote. */
export function decode(text: string): unknown {
  return decodeValue(JSON.parse(text));
}

// A backslash, a NUL, or a lone surrogate (a high one not followed by a low one, or a low one not after a high one).
const UNSAFE = /[\\\0]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A key as PostgreSQL text holds it, one to one: a backslash is doubled, a NUL and a lone surrogate are
 * written as \uXXXX; every other character is itself (so keys stay readable in the tables).
 * @example
 * keyText('a\\b\0') // 'a\\\\b\\u0000'
 */
export function keyText(key: string): string {
  return key.replace(UNSAFE, (c) => (c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}
