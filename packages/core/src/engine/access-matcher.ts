import ipaddr from 'ipaddr.js';
import type { AccessEntry } from './access-list-store.js';
import { addressBytes } from './address.js';

/**
 * The entries of one key or one network: every spelling of it on either list (`10.0.0.1` and
 * `::ffff:10.0.0.1`, `2001:db8::/32` and `2001:0DB8:0::/32`), each with its own expiry.
 */
type Holders = AccessEntry[];

/** One family's ranges: by prefix length (longest first), the networks of that length. */
interface Ranges {
  /** The prefix lengths in use, longest first: a lookup tries only these. */
  lengths: number[];
  byLength: Map<number, Map<string, Holders>>;
}

const emptyRanges = (): Ranges => ({ lengths: [], byLength: new Map() });

/** A stored entry the matcher cannot enforce (written by an older version or by hand), and why. */
export interface UnenforcedEntry {
  readonly entry: AccessEntry;
  readonly why: string;
}

/**
 * An access list compiled for lookups: key entries in a map (O(1)); addresses and CIDR ranges by family
 * and prefix length, each length a map of its networks, so an address costs one map read per prefix length
 * in use (at most 33 for IPv4, 129 for IPv6), whatever the list's size. A key entry is matched against the
 * key, an address or range only against the client address the call gave (never against the key, whatever
 * it looks like). Among ranges the most specific holds (a carve-out: allow 10.1.0.0/16 inside a denied
 * 10.0.0.0/8); for one key or one network, whatever its spelling, a live deny wins over a live allow; between
 * the key's entry and the address's, a deny wins. An IPv4-mapped IPv6 address or range is its IPv4 one, on
 * both sides. Entries it cannot enforce are kept in `unenforced` (the list warns about them), never matched.
 * @example
 * const matcher = AccessMatcher.of([{ entry: '10.0.0.0/8', list: 'deny' }])
 * matcher.match('ip:10.1.2.3', '10.1.2.3', Date.now()) // the entry
 */
export class AccessMatcher {
  readonly #exact = new Map<string, Holders>();
  readonly #v4: Ranges = emptyRanges();
  readonly #v6: Ranges = emptyRanges();
  /** No entry that can hold: a decision pays one comparison. */
  readonly empty: boolean;
  /** Some entry is an address or range: a call's address is looked up. */
  readonly hasRanges: boolean;
  readonly unenforced: readonly UnenforcedEntry[];

  private constructor(entries: readonly AccessEntry[]) {
    const unenforced: UnenforcedEntry[] = [];
    for (const entry of entries) {
      const kind = entryKind(entry.entry);
      if (kind.kind === 'invalid') {
        unenforced.push({ entry, why: kind.why });
        continue;
      }
      if (kind.kind === 'key') {
        hold(this.#exact, kind.key, entry);
        continue;
      }
      const ranges = kind.family === 'ipv4' ? this.#v4 : this.#v6;
      let networks = ranges.byLength.get(kind.length);
      if (networks === undefined) {
        ranges.byLength.set(kind.length, (networks = new Map()));
        ranges.lengths.push(kind.length);
      }
      hold(networks, kind.network, entry);
    }
    for (const ranges of [this.#v4, this.#v6]) ranges.lengths.sort((a, b) => b - a);
    this.unenforced = unenforced;
    this.hasRanges = this.#v4.lengths.length + this.#v6.lengths.length > 0;
    this.empty = this.#exact.size === 0 && !this.hasRanges;
  }

  static of(entries: readonly AccessEntry[]): AccessMatcher {
    return new AccessMatcher(entries);
  }

  /**
   * The entry that holds at `nowMs` (an expired one holds no more) for `key` and the client `address`
   * (undefined: the call gave none, and no address or range can hold; else a checked one, see addressOption).
   */
  match(key: string, address: string | undefined, nowMs: number): AccessEntry | undefined {
    const byKey = this.#exact.size === 0 ? undefined : holding(this.#exact.get(key), nowMs);
    if (byKey?.list === 'deny') return byKey;
    const byAddress = address === undefined || !this.hasRanges ? undefined : this.#range(address, nowMs);
    return byAddress?.list === 'deny' ? byAddress : (byKey ?? byAddress);
  }

  /** The entry of the most specific network holding `address` that has a live one. */
  #range(address: string, nowMs: number): AccessEntry | undefined {
    const bytes = addressBytes(address);
    if (bytes === undefined) return undefined;
    const ranges = bytes.length === 4 ? this.#v4 : this.#v6;
    for (const length of ranges.lengths) {
      const entry = holding(ranges.byLength.get(length)?.get(networkOf(bytes, length)), nowMs);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }
}

function hold(map: Map<string, Holders>, name: string, entry: AccessEntry): void {
  const holders = map.get(name);
  if (holders === undefined) map.set(name, [entry]);
  else holders.push(entry);
}

/** The live deny among `holders`, else the live allow: a deny never loses to another spelling's allow. */
function holding(holders: Holders | undefined, nowMs: number): AccessEntry | undefined {
  if (holders === undefined) return undefined;
  let allowed: AccessEntry | undefined;
  for (const entry of holders) {
    if (!(entry.expiresAt === undefined || entry.expiresAt > nowMs)) continue;
    if (entry.list === 'deny') return entry;
    allowed ??= entry;
  }
  return allowed;
}

/**
 * The prefix that makes an entry a key whatever the rest looks like: `key=12:34:56` lists the key
 * `12:34:56`, `key=key=x` the key `key=x`.
 */
export const KEY_ENTRY_PREFIX = 'key=';

/**
 * Text an operator meant as an address or a range: digits and dots (IPv4 and its legacy forms), or hex
 * with two colons or more (IPv6), maybe with a zone, a slash and anything after it. Such text is never
 * taken as a key: it is a valid address or range, or it is refused (see entryKind); a key of that shape is
 * listed as `key=` and the key.
 */
const ADDRESS_LIKE = /^(?:\d+(?:\.\d*)+|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)(?:%[^/]*)?(?:\/.*)?$/s;

/** What an entry's text is: a key (the key it names), an address or range (its family, prefix length and network), or refused. */
export type EntryKind =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'range'; readonly family: 'ipv4' | 'ipv6'; readonly length: number; readonly network: string }
  | { readonly kind: 'invalid'; readonly why: string };

/**
 * What an entry's text is. `key=` and the rest is that key, whatever it looks like. Text shaped as an
 * address or range (see ADDRESS_LIKE) is an address or range when ipaddr.js reads it as one in its usual
 * form, else `invalid`, saying why: spaces, leading zeros and other forms that are no address, a zone id
 * (clients are compared without one), a prefix length that is not 0-32 or 0-128, host bits set past the
 * prefix length (`10.1.2.3/8`: write `10.0.0.0/8`). Any other text is a key.
 * @example
 * entryKind('203.0.113.0/24') // { kind: 'range', family: 'ipv4', length: 24, network: 'cb007100' }
 * entryKind('010.0.0.1').kind // 'invalid'
 * entryKind('key=12:34:56') // { kind: 'key', key: '12:34:56' }
 */
export function entryKind(text: string): EntryKind {
  if (text.startsWith(KEY_ENTRY_PREFIX)) {
    const key = text.slice(KEY_ENTRY_PREFIX.length);
    return key === '' ? invalid(`it names no key after ${KEY_ENTRY_PREFIX}`) : { kind: 'key', key };
  }
  const bare = text.replace(/\s+/g, '');
  if (!ADDRESS_LIKE.test(bare)) return { kind: 'key', key: text };
  const asKey = ` (a key of that shape is listed as ${JSON.stringify(KEY_ENTRY_PREFIX + text)})`;
  if (bare !== text) return invalid(`it holds spaces${asKey}`);
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  if (address.includes('%'))
    return invalid(
      "it names a zone (%...): a client's address is matched without one, so the entry would hold on every interface",
    );
  if (addressBytes(address) === undefined)
    return invalid(`it is no IPv4 address (four decimal parts 0-255, no leading zeros) or IPv6 address${asKey}`);
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
