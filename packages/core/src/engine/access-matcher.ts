import ipaddr from 'ipaddr.js';
import type { AccessEntry } from './access-list-store.js';

/** One family's ranges: by prefix length (longest first), the networks of that length. */
interface Ranges {
  /** The prefix lengths in use, longest first: a lookup tries only these. */
  lengths: number[];
  byLength: Map<number, Map<string, AccessEntry>>;
}

const emptyRanges = (): Ranges => ({ lengths: [], byLength: new Map() });

/**
 * An access list compiled for lookups: exact entries in a map (O(1)); addresses and CIDR ranges by family
 * and prefix length, each length a map of its networks, so an address costs one map read per prefix length
 * in use (at most 33 for IPv4, 129 for IPv6, whatever the list's size). The most specific entry holds: an
 * exact key first, then the longest matching range, whichever list it is on.
 * @example
 * const matcher = AccessMatcher.of([{ entry: '10.0.0.0/8', list: 'deny' }])
 * matcher.match('10.1.2.3', '10.1.2.3', Date.now()) // the entry
 */
export class AccessMatcher {
  readonly #exact = new Map<string, AccessEntry>();
  readonly #v4: Ranges = emptyRanges();
  readonly #v6: Ranges = emptyRanges();
  /** No entry at all: a decision pays one comparison. */
  readonly empty: boolean;
  /** Some entry is an address or range: keys are read as addresses. */
  readonly hasRanges: boolean;

  private constructor(entries: readonly AccessEntry[]) {
    for (const entry of entries) {
      const range = rangeOf(entry.entry);
      if (range === undefined) {
        this.#exact.set(entry.entry, entry);
        continue;
      }
      const ranges = range.family === 'ipv4' ? this.#v4 : this.#v6;
      let networks = ranges.byLength.get(range.length);
      if (networks === undefined) {
        ranges.byLength.set(range.length, (networks = new Map()));
        ranges.lengths.push(range.length);
      }
      networks.set(range.network, entry);
    }
    for (const ranges of [this.#v4, this.#v6]) ranges.lengths.sort((a, b) => b - a);
    this.empty = entries.length === 0;
    this.hasRanges = this.#v4.lengths.length + this.#v6.lengths.length > 0;
  }

  static of(entries: readonly AccessEntry[]): AccessMatcher {
    return new AccessMatcher(entries);
  }

  /**
   * The entry that holds for `key` at `nowMs` (an expired one holds no more), looking `address` up in the
   * ranges (undefined: the key is no address).
   */
  match(key: string, address: string | undefined, nowMs: number): AccessEntry | undefined {
    const exact = this.#exact.get(key);
    if (exact !== undefined && live(exact, nowMs)) return exact;
    if (!this.hasRanges || address === undefined) return undefined;
    if (!isAddress(address)) return undefined;
    const parsed = ipaddr.process(address);
    const ranges = parsed.kind() === 'ipv4' ? this.#v4 : this.#v6;
    if (ranges.lengths.length === 0) return undefined;
    const bytes = parsed.toByteArray();
    for (const length of ranges.lengths) {
      const entry = ranges.byLength.get(length)?.get(networkOf(bytes, length));
      if (entry !== undefined && live(entry, nowMs)) return entry;
    }
    return undefined;
  }
}

const live = (entry: AccessEntry, nowMs: number): boolean => entry.expiresAt === undefined || entry.expiresAt > nowMs;

/**
 * An address as written by people and proxies: four-part decimal IPv4 or IPv6 (never the numeric forms
 * ipaddr.js also reads, so a numeric key such as a user id is never taken for an address).
 */
export function isAddress(text: string): boolean {
  // ipaddr.js throws inside its checks for what is no address: the shapes below keep plain keys off that path.
  if (IPV4_SHAPE.test(text)) return ipaddr.IPv4.isValidFourPartDecimal(text);
  return IPV6_SHAPE.test(text) && ipaddr.IPv6.isValid(text);
}

const IPV4_SHAPE = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
/** Hex groups and colons (an embedded IPv4 and a zone id allowed), at least one colon. */
const IPV6_SHAPE = /^(?=.*:)[0-9A-Fa-f:.]+(%[0-9A-Za-z._~-]+)?$/;

/** Text shaped as a CIDR range (an address, a slash, digits), valid or not: see rangeOf. */
export const looksLikeRange = (text: string): boolean => /^[0-9A-Fa-f:.]+\/\d+$/.test(text);

/**
 * An entry's range: its family, prefix length and network; undefined for a plain key, and for text shaped as
 * a range that is none (the caller refuses it: see looksLikeRange).
 */
export function rangeOf(entry: string): { family: 'ipv4' | 'ipv6'; length: number; network: string } | undefined {
  const slash = entry.indexOf('/');
  if (slash >= 0) {
    if (!looksLikeRange(entry) || !isAddress(entry.slice(0, slash)) || !ipaddr.isValidCIDR(entry)) return undefined;
    const [address, length] = ipaddr.parseCIDR(entry);
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && length >= 96) {
      const v4 = (address as ipaddr.IPv6).toIPv4Address();
      return { family: 'ipv4', length: length - 96, network: networkOf(v4.toByteArray(), length - 96) };
    }
    return { family: address.kind(), length, network: networkOf(address.toByteArray(), length) };
  }
  if (!isAddress(entry)) return undefined;
  const address = ipaddr.process(entry);
  const bytes = address.toByteArray();
  return { family: address.kind(), length: bytes.length * 8, network: networkOf(bytes, bytes.length * 8) };
}
/** The first `length` bits of `bytes`, the rest zeroed, as hex: a network's name in its length's map. */
function networkOf(bytes: readonly number[], length: number): string {
  let hex = '';
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, length - i * 8));
    const byte = (bytes[i] as number) & ((0xff << (8 - keep)) & 0xff);
    hex += byte.toString(16).padStart(2, '0');
  }
  return hex;
}
