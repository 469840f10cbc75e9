/**
 * Client addresses as the access lists read them, parsed by hand: a decision pays tens of nanoseconds where
 * ipaddr.js (which entries are still read with) takes about a microsecond per IPv4 address and three per IPv6
 * one. It reads what ipaddr.js reads in the usual forms (address.test.ts checks them against each other):
 * IPv4 in four decimal parts 0-255 without leading zeros (never the numeric forms such as `10.1` or
 * `0x0a000001`, so a numeric key is never taken for an address), IPv6 with `::`, an embedded IPv4 address and
 * a zone id (`%eth0`, ignored: clients are matched without one).
 */

const V4_PART = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${V4_PART}(?:\\.${V4_PART}){3}$`);
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;
const ZONE = /^[0-9A-Za-z]+$/;

/**
 * The address's bytes: four for IPv4 and for an IPv4-mapped IPv6 address (`::ffff:10.0.0.1` is 10.0.0.1, as
 * ipaddr.process says), sixteen for other IPv6; undefined for text that is no address.
 * @example
 * addressBytes('::ffff:10.0.0.1') // [10, 0, 0, 1]
 */
export function addressBytes(text: string): number[] | undefined {
  if (text.length <= 15 && IPV4.test(text)) return text.split('.').map(Number);
  return text.length <= 100 && text.includes(':') ? ipv6Bytes(text) : undefined;
}

/** True for text that is an IPv4 address in four decimal parts or an IPv6 address (see addressBytes). */
export const isAddress = (text: string): boolean => addressBytes(text) !== undefined;

function ipv6Bytes(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  const address = zone < 0 ? text : text.slice(0, zone);
  if (zone >= 0 && !ZONE.test(text.slice(zone + 1))) return undefined;
  // ipaddr.js reads the deprecated IPv4-compatible form (::1.2.3.4) as the IPv4-mapped one.
  if (address.startsWith('::') && address.length <= 17 && IPV4.test(address.slice(2)))
    return address.slice(2).split('.').map(Number);
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const head = groups(halves[0] as string);
  const tail = halves.length === 2 ? groups(halves[1] as string) : [];
  if (head === undefined || tail === undefined) return undefined;
  // An embedded IPv4 address stands for the last two groups only: it ends the text.
  const v4At = [...head, ...tail].findIndex((g) => typeof g !== 'number');
  if (v4At >= 0 && (v4At !== head.length + tail.length - 1 || (halves.length === 2 && tail.length === 0)))
    return undefined;
  const words: number[] = [];
  for (const g of [...head, ...tail]) {
    if (typeof g === 'number') words.push(g);
    else {
      const [a = 0, b = 0, c = 0, d = 0] = g;
      words.push((a << 8) | b, (c << 8) | d);
    }
  }
  const headWords = words.length - wordsOf(tail);
  const missing = 8 - words.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const full = [...words.slice(0, headWords), ...new Array<number>(missing).fill(0), ...words.slice(headWords)];
  const bytes = full.flatMap((w) => [w >> 8, w & 0xff]);
  return full.slice(0, 5).every((w) => w === 0) && full[5] === 0xffff ? bytes.slice(12) : bytes;
}

/** A hex group's value, or an embedded IPv4 address's four bytes. */
type Group = number | readonly number[];

/** The groups of one side of `::` (empty text: none); an IPv4 address as its four bytes. */
function groups(side: string): Group[] | undefined {
  if (side === '') return [];
  const out: Group[] = [];
  for (const part of side.split(':')) {
    if (HEX_GROUP.test(part)) out.push(Number.parseInt(part, 16));
    else if (part.length <= 15 && IPV4.test(part)) out.push(part.split('.').map(Number));
    else return undefined;
  }
  return out;
}

const wordsOf = (side: readonly Group[]): number =>
  side.reduce<number>((n, g) => n + (typeof g === 'number' ? 1 : 2), 0);
