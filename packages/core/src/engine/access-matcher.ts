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
 * An access list compiled for lookups: key entries in a map (O(1)); addresses and CIDR ranges by family
 * and prefix length, each length a map of its networks, so an address costs one map read per prefix length
 * in use (at most 33 for IPv4, 129 for IPv6), whatever the list's size. A key entry is matched against the
 * key, an address or range only against the client address the call gave (never against the key, whatever
 * it looks like). Among ranges the most specific holds (a carve-out: allow 10.1.0.0/16 inside a denied
 * 10.0.0.0/8); between the key's entry and the address's, a deny wins.
 * @example
 * const matcher = AccessMatcher.of([{ entry: '10.0.0.0/8', list: 'deny' }])
 * matcher.match('ip:10.1.2.3', '10.1.2.3', Date.now()) // the entry
 */
export class AccessMatcher {
  readonly #exact = new Map<string, AccessEntry>();
  readonly #v4: Ranges = emptyRanges();
  readonly #v6: Ranges = emptyRanges();
  /** No entry at all: a decision pays one comparison. */
  readonly empty: boolean;
  /** Some entry is an address or range: a call's address is looked up. */
  readonly hasRanges: boolean;

  private constructor(entries: readonly AccessEntry[]) {
    for (const entry of entries) {
      const kind = entryKind(entry.entry);
      // A stored entry no sluice would write (a range refused today, written by hand) matches no address.
      if (kind.kind !== 'range') {
        if (kind.kind === 'key') this.#exact.set(entry.entry, entry);
        continue;
      }
      const ranges = kind.family === 'ipv4' ? this.#v4 : this.#v6;
      let networks = ranges.byLength.get(kind.length);
      if (networks === undefined) {
        ranges.byLength.set(kind.length, (networks = new Map()));
        ranges.lengths.push(kind.length);
      }
      networks.set(kind.network, entry);
    }
    for (const ranges of [this.#v4, this.#v6]) ranges.lengths.sort((a, b) => b - a);
    this.empty = entries.length === 0;
    this.hasRanges = this.#v4.lengths.length + this.#v6.lengths.length > 0;
  }

  static of(entries: readonly AccessEntry[]): AccessMatcher {
    return new AccessMatcher(entries);
  }

  /**
   * The entry that holds at `nowMs` (an expired one holds no more) for `key` and the client `address`
   * (undefined: the call gave none, and no address or range can hold).
   */
  match(key: string, address: string | undefined, nowMs: number): AccessEntry | undefined {
    const found = this.#exact.get(key);
    const byKey = found !== undefined && live(found, nowMs) ? found : undefined;
    if (byKey?.list === 'deny') return byKey;
    const byAddress = address === undefined ? undefined : this.#range(address, nowMs);
    return byAddress?.list === 'deny' ? byAddress : (byKey ?? byAddress);
  }

  /** The most specific live range holding `address`. */
  #range(address: string, nowMs: number): AccessEntry | undefined {
    if (!this.hasRanges || !isAddress(address)) return undefined;
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

/**
 * Text an operator meant as an address or a range: digits and dots (IPv4 and its legacy forms), or hex
 * with two colons or more (IPv6), maybe with a zone, a slash and anything after it. Such text is never
 * taken as a key: it is a valid address or range, or it is refused (see entryKind).
 */
const ADDRESS_LIKE = /^(?:\d+(?:\.\d*)+|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)(?:%[^/]*)?(?:\/.*)?$/s;

/** What an entry's text is: a key, an address or range (its family, prefix length and network), or refused. */
export type EntryKind =
  | { readonly kind: 'key' }
  | { readonly kind: 'range'; readonly family: 'ipv4' | 'ipv6'; readonly length: number; readonly network: string }
  | { readonly kind: 'invalid'; readonly why: string };

/**
 * What an entry's text is. Text shaped as an address or range (see ADDRESS_LIKE) that cannot be enforced as
 * written is `invalid`, saying why: spaces, leading zeros and other forms that are no address, a zone id
 * (clients are compared without one), a prefix length that is not 0-32 or 0-128, host bits set past the
 * prefix length (`10.1.2.3/8`: write `10.0.0.0/8`). Any other text is a key.
 * @example
 * entryKind('203.0.113.0/24') // { kind: 'range', family: 'ipv4', length: 24, network: 'cb007100' }
 * entryKind('010.0.0.1').kind // 'invalid'
 */
export function entryKind(text: string): EntryKind {
  const bare = text.replace(/\s+/g, '');
  if (!ADDRESS_LIKE.test(bare)) return { kind: 'key' };
  if (bare !== text) return invalid('it holds spaces');
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  if (address.includes('%'))
    return invalid(
      "it names a zone (%...): a client's address is matched without one, so the entry would hold on every interface",
    );
  if (!isAddress(address))
    return invalid('it is no IPv4 address (four decimal parts 0-255, no leading zeros) or IPv6 address');
  const parsed = ipaddr.parse(address);
  const bits = parsed.kind() === 'ipv4' ? 32 : 128;
  let length = bits;
  if (slash >= 0) {
    const suffix = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(suffix) || Number(suffix) > bits)
      return invalid(`its prefix length must be a whole number from 0 to ${bits}`);
    length = Number(suffix);
  }
  let bytes = parsed.toByteArray();
  const network = networkOf(bytes, length);
  if (network !== networkOf(bytes, bits)) {
    const first = ipaddr.fromByteArray(hexBytes(network)).toString();
    return invalid(`it has host bits set past /${length}: the range is ${first}/${length}`);
  }
  // An IPv4-mapped IPv6 address or range is the IPv4 one: clients' mapped addresses are matched as IPv4.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() && length >= 96) {
    bytes = (parsed as ipaddr.IPv6).toIPv4Address().toByteArray();
    return { kind: 'range', family: 'ipv4', length: length - 96, network: networkOf(bytes, length - 96) };
  }
  return { kind: 'range', family: parsed.kind(), length, network };
}

const invalid = (why: string): EntryKind => ({ kind: 'invalid', why });

/** Bytes from networkOf's hex. */
const hexBytes = (hex: string): number[] =>
  Array.from({ length: hex.length / 2 }, (_, i) => Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16));

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
