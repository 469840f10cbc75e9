/**
 * The seam between a limiter's access list and where it lives: in this process (the memory store) or on
 * Redis (the Redis stores), where an entry one node (or the CLI, or the admin router) adds holds on every
 * node within a second. An entry is a key, or an IP address or IPv4/IPv6 CIDR range (matched against the
 * client address a call gives, never against the key), on the allow list (skips limiting) or the deny list
 * (denied, with a reason), until it expires or is removed. Expiry is the store's: its clock (Redis TIME)
 * sets and ends an entry's time, whoever wrote it.
 */

/** Which list an entry is on. */
export type AccessListName = 'allow' | 'deny';

/** One entry of a limiter's access list. */
export interface AccessEntry {
  /** A key, an IP address, or a CIDR range ('203.0.113.0/24', '2001:db8::/32'). */
  readonly entry: string;
  readonly list: AccessListName;
  /** When the entry stops holding, ms since the epoch on the store's clock (Redis TIME); absent: until removed. */
  readonly expiresAt?: number;
  /** Why it is there: a denied request's decision carries it (and the admin page shows it). */
  readonly reason?: string;
}

/** The most entries one limiter's lists hold (both lists together): a longer list is refused. */
export const MAX_ACCESS_ENTRIES = 100_000;

/** An entry as a writer puts it: its time to live, which the store turns into `expiresAt` on its own clock. */
export interface NewAccessEntry {
  readonly entry: string;
  readonly list: AccessListName;
  /** How long it holds from when the store writes it (absent: until removed). */
  readonly ttlMs?: number;
  readonly reason?: string;
}

/**
 * A list as a store read it: its version, the store's clock at the read, and, when asked, its entries.
 * A version never names two contents, even after a store lost its lists or their last changes (a Redis
 * restart without persistence, a FLUSHALL, a failover to a lagging replica): Redis draws a random one per
 * change, never a count that could start again. '' means no version is stored; such a read always carries
 * the entries.
 */
export interface StoredAccessList {
  readonly version: string;
  /** The store's clock at the read (ms since the epoch; Redis TIME): what `expiresAt` is measured against. */
  readonly now: number;
  /** Absent when the version was the one the reader knew: nothing changed. */
  readonly entries?: readonly AccessEntry[];
}

/** One limiter's access list in a store (its prefix's: every limiter and node of the prefix shares it). */
export interface AccessListBinding {
  /**
   * Changes arrive by messages that can be missed (a Redis subscription): the limiter reads the list's
   * version again every `accessList.refreshMs` whatever it heard.
   */
  readonly remote: boolean;
  /** The list, or only its version when it is still `knownVersion` (never when that is ''). */
  read(knownVersion?: string): Promise<StoredAccessList>;
  /**
   * Adds `entries`, each replacing an entry of the same text, their expiry set on the store's clock; refuses
   * (SluiceRangeError) what would take the list past MAX_ACCESS_ENTRIES, adding none. Tells the other bindings.
   */
  put(entries: readonly NewAccessEntry[]): Promise<void>;
  /** Removes the entries of these texts; how many there were. Tells the other bindings. */
  remove(entries: readonly string[]): Promise<number>;
  /** Calls `listener` when another binding (another node) changed the list; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
  /** The limiter closed: drop what the store holds for it. */
  unbind(): void;
}

/** A store that keeps access lists. */
export interface AccessListStore {
  /** Binds the access list of the limiter whose namespace is `prefix`. */
  bindAccessList(prefix: string): AccessListBinding;
}

/**
 * True for a store that keeps access lists.
 * @example
 * const list = hasAccessLists(store) ? store.bindAccessList(prefix) : new MemoryAccessLists().bind(prefix)
 */
export function hasAccessLists(store: object): store is AccessListStore {
  return typeof (store as Partial<AccessListStore>).bindAccessList === 'function';
}
