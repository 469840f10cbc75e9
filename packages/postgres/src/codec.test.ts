import { describe, expect, it } from 'vitest';
import { decode, encode, keyText } from './codec.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe('codec', () => {
  it('gives back every value a state, a ban, a lessee set or a fleet holds, bit for bit', () => {
    const values: unknown[] = [
      { tokens: Number.POSITIVE_INFINITY, at: Number.NEGATIVE_INFINITY, x: Number.NaN, zero: -0, n: 0.1 + 0.2 },
      [1, -0, Number.MAX_VALUE, Number.MIN_VALUE, 2 ** 53 + 2, undefined, null],
      { previous: undefined, current: 0.25 },
      new Map<string, unknown>([
        ['node\u0000a', 1],
        ['\ud800', { current: 1, previous: undefined }],
      ]),
      { $: 'n', v: 'Infinity' },
      { members: new Map([['n', 1]]), summary: undefined, $: { nested: [Number.NaN] } },
      'text \\ with "quotes"',
      true,
    ];
    for (const value of values) {
      const text = encode(value);
      expect(text.includes('\u0000')).toBe(false);
      expect(text).not.toMatch(LONE_SURROGATE);
      expect(Object.is(decode(text), value) || equalBits(decode(text), value)).toBe(true);
    }
  });

  it('writes keys as PostgreSQL text, one to one', () => {
    const keys = ['plain', 'a\\b', 'a\\u0000', 'a\u0000', '\ud800x', '\udc00', '\ud83d\ude00', '\\\\', ''];
    const texts = keys.map(keyText);
    expect(new Set(texts).size).toBe(keys.length);
    for (const text of texts) {
      expect(text.includes('\u0000')).toBe(false);
      expect(text).not.toMatch(LONE_SURROGATE);
    }
    expect(keyText('user:1')).toBe('user:1');
    expect(keyText('\ud83d\ude00')).toBe('\ud83d\ude00');
  });
});

/** Equal as the conformance suite compares: numbers by their bits (NaN equals NaN, -0 is not 0), Maps by entries. */
function equalBits(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Object.is(a, b);
  if (a instanceof Map && b instanceof Map)
    return (
      a.size === b.size &&
      [...a].every(([k, v], i) => {
        const [k2, v2] = [...b][i] as [unknown, unknown];
        return equalBits(k, k2) && equalBits(v, v2);
      })
    );
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => equalBits(v, b[i]));
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return (
      ka.length === kb.length &&
      ka.every((k) => equalBits((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    );
  }
  return a === b;
}
