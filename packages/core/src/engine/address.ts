/**
 * Client addresses as the access lists read them, parsed by hand, once per decision: some 70 ns for IPv4 and
 * 200 ns for IPv6 on the bench box, where ipaddr.js (which entries are still read with) took 0.5 and 1.1 us to
 * check an address and 0.7 and 2.8 us more to parse it. It reads what ipaddr.js reads in the usual forms (address.test.ts checks them against each other):
 * IPv4 in four decimal parts 0-255 without leading zeros (never the numeric forms such as `10.1` or
 * `0x0a000001`, so a numeric key is never taken for an address), IPv6 with `::`, an embedded IPv4 address and
 * a zone id (`%eth0`, ignored: clients are matched without one).
 */

const ZONE = /^[0-9A-Za-z]+$/;

/**
 * The address's bytes: four for IPv4 and for an IPv4-mapped IPv6 address (`::ffff:10.0.0.1` is 10.0.0.1, as
 * ipaddr.process says), sixteen for other IPv6; undefined for text that is no address.
 * @example
 * addressBytes('::ffff:10.0.0.1') // [10, 0, 0, 1]
 */
export function addressBytes(text: string): readonly number[] | undefined {
  // A decision checks its address (addressOption) and then looks it up: the second read is this memo's.
  if (text === last.text) return last.bytes;
  const bytes = text.length > 100 ? undefined : text.includes(':') ? ipv6Bytes(text) : ipv4Bytes(text);
  last = { text, bytes };
  return bytes;
}

/** The last address read (its bytes are only read by callers, never changed). */
let last: { text: string; bytes: readonly number[] | undefined } = { text: '', bytes: undefined };

/** True for text that is an IPv4 address in four decimal parts or an IPv6 address (see addressBytes). */
export const isAddress = (text: string): boolean => addressBytes(text) !== undefined;

function ipv6Bytes(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  if (zone >= 0 && !ZONE.test(text.slice(zone + 1))) return undefined;
  const end = zone < 0 ? text.length : zone;
  // ipaddr.js reads the deprecated IPv4-compatible form (::1.2.3.4) as the IPv4-mapped one.
  if (text.startsWith('::') && end <= 17) {
    const v4 = ipv4Bytes(text.slice(2, end));
    if (v4 !== undefined) return v4;
  }
  const words: number[] = [];
  let gap = -1;
  let i = 0;
  if (text.startsWith('::')) {
    gap = 0;
    i = 2;
  }
  // One group per turn: 1-4 hex digits, or an IPv4 address ending the text (the last two words).
  while (i < end) {
    const start = i;
    let word = 0;
    while (i < end && i - start < 5) {
      const digit = hexDigit(text.charCodeAt(i));
      if (digit < 0) break;
      word = word * 16 + digit;
      i++;
    }
    if (i < end && text.charCodeAt(i) === 0x2e) {
      const v4 = ipv4Bytes(text.slice(start, end));
      if (v4 === undefined) return undefined;
      const [a = 0, b = 0, c = 0, d = 0] = v4;
      words.push((a << 8) | b, (c << 8) | d);
      i = end;
      break;
    }
    if (i === start || i - start > 4) return undefined;
    words.push(word);
    if (i === end) break;
    if (text.charCodeAt(i) !== 0x3a) return undefined;
    i++;
    if (text.charCodeAt(i) === 0x3a) {
      if (gap >= 0) return undefined;
      gap = words.length;
      i++;
    } else if (i === end) return undefined;
  }
  const missing = 8 - words.length;
  if (gap >= 0 ? missing < 1 : missing !== 0) return undefined;
  const bytes = new Array<number>(16).fill(0);
  for (let w = 0; w < words.length; w++) {
    const at = gap < 0 || w < gap ? w : w + missing;
    const word = words[w] as number;
    bytes[at * 2] = word >> 8;
    bytes[at * 2 + 1] = word & 0xff;
  }
  let mapped = bytes[10] === 0xff && bytes[11] === 0xff;
  for (let b = 0; mapped && b < 10; b++) mapped = bytes[b] === 0;
  return mapped ? bytes.slice(12) : bytes;
}

/** Four decimal parts 0-255, no leading zeros, no sign or space: the four bytes. */
function ipv4Bytes(text: string): number[] | undefined {
  const bytes: number[] = [];
  let i = 0;
  while (bytes.length < 4) {
    const start = i;
    let value = 0;
    while (i < text.length && i - start < 4) {
      const code = text.charCodeAt(i);
      if (code < 0x30 || code > 0x39) break;
      value = value * 10 + code - 0x30;
      i++;
    }
    const digits = i - start;
    if (digits === 0 || digits > 3 || value > 255 || (digits > 1 && text.charCodeAt(start) === 0x30)) return undefined;
    bytes.push(value);
    if (bytes.length < 4) {
      if (text.charCodeAt(i) !== 0x2e) return undefined;
      i++;
    }
  }
  return i === text.length ? bytes : undefined;
}

/** A hex digit's value, -1 for another character. */
function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}
