import { SluiceRangeError, SluiceTypeError } from '../../foundation/errors.js';
import { describe } from '../../foundation/validate.js';

/**
 * Client addresses as rate-limit keys. An IPv6 client usually holds a whole /64 or /56, so keying on its
 * full address would let it rotate through 2^64 buckets; the prefix is what identifies it.
 */

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const HEXTET = /^[0-9a-fA-F]{1,4}$/;

/** The 8 hextets of an IPv6 address (with `::` and a dotted IPv4 tail), or undefined when it is not one. */
function ipv6Hextets(address: string): number[] | undefined {
  let text = address;
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (lastColon !== -1 && text.includes('.', lastColon)) {
    const v4 = text.slice(lastColon + 1);
    if (!IPV4.test(v4)) return undefined;
    const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
    tail = [(a << 8) | b, (c << 8) | d];
    text = text.slice(0, lastColon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups = part.split(':');
    if (!groups.every((g) => HEXTET.test(g))) return undefined;
    return groups.map((g) => Number.parseInt(g, 16));
  };
  const head = parse(halves[0] as string);
  const rest = halves.length === 2 ? parse(halves[1] as string) : [];
  if (head === undefined || rest === undefined) return undefined;
  const given = head.length + rest.length + tail.length;
  if (halves.length === 1) return given === 8 ? [...head, ...tail] : undefined;
  if (given > 7) return undefined;
  return [...head, ...new Array<number>(8 - given).fill(0), ...rest, ...tail];
}

const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one that identifies the client: IPv4-mapped
 * (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, but not `::` or
 * `::1`), the well-known NAT64 prefix (`64:ff9b::/96`, RFC 6052), 6to4 (`2002:AABB:CCDD::/48`: the site's
 * IPv4) and Teredo (`2001:0::/32`: the client's public IPv4, stored inverted). Keyed by their /56, every
 * client behind one NAT64 gateway, every IPv4-compatible address and every Teredo client would share one
 * bucket. Not recognised: operator-chosen NAT64 prefixes (RFC 8215's `64:ff9b:1::/48` included), whose
 * layout only the network knows; those are keyed by their prefix like any IPv6 address.
 */
function embeddedIpv4(h: readonly number[]): string | undefined {
  const zeros = (from: number, to: number) => h.slice(from, to).every((x) => x === 0);
  const [h0, h1, h2, , h4, h5, h6, h7] = h as [number, number, number, number, number, number, number, number];
  if (zeros(0, 5) && h5 === 0xffff) return v4(h6, h7);
  if (zeros(0, 4) && h4 === 0xffff && h5 === 0) return v4(h6, h7);
  if (zeros(0, 6) && (h6 !== 0 || h7 > 1)) return v4(h6, h7);
  if (h0 === 0x64 && h1 === 0xff9b && zeros(2, 6)) return v4(h6, h7);
  if (h0 === 0x2002) return v4(h1, h2);
  if (h0 === 0x2001 && h1 === 0) return v4(~h6 & 0xffff, ~h7 & 0xffff);
  return undefined;
}

/**
 * The key part for a client address: an IPv4 address as is (also when an IPv6 address embeds it, see
 * embeddedIpv4), any other IPv6 address cut to its first `ipv6Subnet` bits and written as a prefix
 * (`2001:db8:0:100::/56`). Returns undefined for anything that is not an IP address.
 * @example
 * ipKey('2001:db8::1') // '2001:db8::/56'
 * ipKey('203.0.113.7') // '203.0.113.7'
 */
export function ipKey(address: string, ipv6Subnet = 56): string | undefined {
  if (typeof address !== 'string')
    throw new SluiceTypeError('address', address, `address must be a string, got ${describe(address)}`);
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 0 || ipv6Subnet > 128) {
    throw new SluiceRangeError(
      'ipv6Subnet',
      ipv6Subnet,
      `ipv6Subnet must be an integer in 0..128, got ${describe(ipv6Subnet)}`,
    );
  }
  if (IPV4.test(address)) return address;
  const hextets = ipv6Hextets(address);
  if (hextets === undefined) return undefined;
  const embedded = embeddedIpv4(hextets);
  if (embedded !== undefined) return embedded;
  const masked = hextets.map((h, i) => {
    const bits = Math.min(16, Math.max(0, ipv6Subnet - i * 16));
    return bits === 0 ? 0 : h & (0xffff << (16 - bits)) & 0xffff;
  });
  return `${masked
    .map((h) => h.toString(16))
    .join(':')
    .replace(/(^|:)0(:0)+$/, '::')}/${ipv6Subnet}`;
}

/**
 * The address in one hop of a proxy header, in the forms proxies send: `203.0.113.7`,
 * `203.0.113.7:50001`, `2001:db8::1`, `[2001:db8::1]`, `[2001:db8::1]:443`, each possibly quoted (RFC 7239).
 * Undefined for anything else (`unknown`, an obfuscated `_node`, garbage).
 */
export function hopAddress(hop: string): string | undefined {
  let text = hop.trim();
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) text = text.slice(1, -1);
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    const rest = end === -1 ? '' : text.slice(end + 1);
    if (end === -1 || !(rest === '' || /^:\d{1,5}$/.test(rest))) return undefined;
    return text.slice(1, end);
  }
  const colon = text.indexOf(':');
  // One colon: an IPv4 address with a port. (An IPv6 address has at least two.)
  if (colon !== -1 && text.indexOf(':', colon + 1) === -1) {
    return /^\d{1,5}$/.test(text.slice(colon + 1)) ? text.slice(0, colon) : undefined;
  }
  return text === '' ? undefined : text;
}
