import { SluiceRangeError, SluiceTypeError } from '../errors.js';
import { describe } from '../validate.js';

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

/**
 * The key part for a client address: an IPv4 address as is (also when written IPv4-mapped, `::ffff:a.b.c.d`),
 * an IPv6 address cut to its first `ipv6Subnet` bits and written as a prefix (`2001:db8:0:100::/56`).
 * Returns undefined for anything that is not an IP address.
 */
export function ipKey(address: string, ipv6Subnet = 56): string | undefined {
  if (typeof address !== 'string') throw new SluiceTypeError('address', address, `address must be a string, got ${describe(address)}`);
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 0 || ipv6Subnet > 128) {
    throw new SluiceRangeError('ipv6Subnet', ipv6Subnet, `ipv6Subnet must be an integer in 0..128, got ${describe(ipv6Subnet)}`);
  }
  if (IPV4.test(address)) return address;
  const hextets = ipv6Hextets(address);
  if (hextets === undefined) return undefined;
  const mapped = hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff;
  if (mapped) {
    const [hi, lo] = [hextets[6] as number, hextets[7] as number];
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  const masked = hextets.map((h, i) => {
    const bits = Math.min(16, Math.max(0, ipv6Subnet - i * 16));
    return bits === 0 ? 0 : h & (0xffff << (16 - bits)) & 0xffff;
  });
  return `${masked.map((h) => h.toString(16)).join(':').replace(/(^|:)0(:0)+$/, '::')}/${ipv6Subnet}`;
}
