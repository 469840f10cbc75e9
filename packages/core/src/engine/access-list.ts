import type { Clock } from '../foundation/clock.js';
import { repeat } from '../foundation/timers.js';
import { warnOnce } from '../foundation/warnings.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { type SchemaOf, optional, parseOptions } from '../foundation/options.js';
import { describe, intervalMs } from '../foundation/validate.js';
import {
  type AccessEntry,
  type AccessListBinding,
  type AccessListName,
  MAX_ACCESS_ENTRIES,
  type NewAccessEntry,
  type StoredAccessList,
} from './access-list-store.js';
import { AccessMatcher, KEY_ENTRY_PREFIX, entryKind } from './access-matcher.js';
import { isAddress } from './address.js';

/** Options of a limiter's `accessList`. */
export interface AccessListOptions {
  /**
   * How often this process reads the list's version again on a shared store, whatever it heard: a missed
   * message heals within this. A change is heard at once otherwise.
   * @default 10000
   */
  refreshMs?: number;
}

/** How often a limiter checks a shared access list's version unless `accessList.refreshMs` says otherwise. */
export const DEFAULT_ACCESS_REFRESH_MS = 10_000;
/** The most entries one allow, deny or unlist call takes (a longer list goes in several calls). */
export const MAX_ENTRIES_PER_CALL = 10_000;
/** The longest an entry's ttlMs may be (2^47 ms, some 4,000 years): its expiry stays an exact integer. */
const MAX_TTL_MS = 2 ** 47;
/** The longest reason an entry keeps. */
const MAX_REASON_LENGTH = 200;

/** Options of `limiter.allow` and `limiter.deny`. */
export interface ListEntryOptions {
  /**
   * The entries hold this long from when the store writes them, on the store's clock (Redis TIME, whatever
   * the writer's clock says), then stop (absent: until removed). At most 2^47 ms.
   */
  ttlMs?: number;
  /** Why (a denied request's decision carries it; the admin page and the CLI show it). At most 200 characters. */
  reason?: string;
}

/**
 * The options `allow` and `deny` take, checked in one step: an unknown one (a misspelt `ttl`) is refused by name.
 * Exported for docs/options.md only (scripts/render-options.ts); no entry point exports it.
 */
export const LIST_ENTRY_OPTIONS = {
  ttlMs: optional((name, value) => {
    if (typeof value === 'number' && value > 0 && value <= MAX_TTL_MS) return value;
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be a number of ms > 0 and at most 2^47, got ${describe(value)}`,
    );
  }),
  reason: optional((name, value) => {
    if (typeof value === 'string' && value.length <= MAX_REASON_LENGTH) return value;
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be a string of at most ${MAX_REASON_LENGTH} characters, got ${describe(value)}`,
    );
  }),
} as const satisfies SchemaOf<ListEntryOptions>;

/** The checked `accessList` option. */
export function accessListValue(name: string, value: unknown): Required<AccessListOptions> | false {
  if (value === false) return false;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SluiceTypeError(name, value, `${name} must be an options object or false, got ${describe(value)}`);
  const o = value as AccessListOptions;
  for (const option of Object.keys(o)) {
    if (option !== 'refreshMs')
      throw new SluiceRangeError(`${name}.${option}`, option, `${name} takes refreshMs; got ${option}`);
  }
  const refreshMs = intervalMs(`${name}.refreshMs`, o.refreshMs ?? DEFAULT_ACCESS_REFRESH_MS, 100, 600_000);
  return { refreshMs };
}

/**
 * The checked `address` option of tryAcquire, acquire and peek: undefined, or an IPv4 address in four
 * decimal parts or an IPv6 address (the client's, as the adapter knows it).
 * @example
 * addressOption(req.socket.remoteAddress) // '203.0.113.7'
 */
export function addressOption(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isAddress(value))
    throw new SluiceRangeError(
      'address',
      value,
      `address must be the client's IPv4 (four decimal parts) or IPv6 address, got ${describe(value)}`,
    );
  return value;
}

/**
 * `entries` of `list` as a store is asked to put them, checked: each a non-empty string of at most
 * `maxLength` characters, text shaped as an address or range a valid one (see entryKind: `key=` and the
 * rest lists any text as a key); at most MAX_ENTRIES_PER_CALL of them. The store sets their expiry on its
 * own clock.
 * @example
 * listEntries('deny', ['10.0.0.0/8'], { reason: 'scan', ttlMs: 60_000 }, 256) // [{ entry: '10.0.0.0/8', list: 'deny', ttlMs: 60000, reason: 'scan' }]
 */
export function listEntries(
  list: AccessListName,
  entries: unknown,
  options: ListEntryOptions | undefined,
  maxLength: number,
): NewAccessEntry[] {
  const texts = entryTexts(entries, maxLength);
  for (const text of texts) {
    const kind = entryKind(text);
    if (kind.kind === 'invalid')
      throw new SluiceRangeError(
        'entries',
        text,
        text.startsWith(KEY_ENTRY_PREFIX)
          ? `entry ${JSON.stringify(text)} cannot be listed: ${kind.why}`
          : `entry ${JSON.stringify(text)} looks like an IP address or CIDR range but cannot be enforced as written: ${kind.why}`,
      );
  }
  const { ttlMs, reason } = parseOptions(`${list} options`, LIST_ENTRY_OPTIONS, options, false);
  return texts.map((entry) => ({
    entry,
    list,
    ...(ttlMs === undefined ? {} : { ttlMs }),
    ...(reason === undefined ? {} : { reason }),
  }));
}

/**
 * Entry texts, checked as texts (one string or an array of non-empty strings), not as entries: what
 * `unlist` takes, so any text a list holds can be removed exactly as listed, whatever version wrote it.
 * @example
 * entryTexts('10.0.0.0/8', 256) // ['10.0.0.0/8']
 */
export function entryTexts(entries: unknown, maxKeyLength: number): string[] {
  // A key of the longest length still fits behind its `key=`.
  const maxLength = maxKeyLength + KEY_ENTRY_PREFIX.length;
  const texts = typeof entries === 'string' ? [entries] : entries;
  if (!Array.isArray(texts))
    throw new SluiceTypeError(
      'entries',
      entries,
      `entries must be a string or an array of strings, got ${describe(entries)}`,
    );
  if (texts.length === 0) throw new SluiceRangeError('entries', texts, 'entries must name at least one entry');
  if (texts.length > MAX_ENTRIES_PER_CALL)
    throw new SluiceRangeError(
      'entries',
      texts.length,
      `one call takes at most ${MAX_ENTRIES_PER_CALL} entries (the lists hold ${MAX_ACCESS_ENTRIES}), got ${texts.length}: add them in several calls`,
    );
  for (const text of texts) {
    if (typeof text !== 'string' || text.length === 0 || text.length > maxLength)
      throw new SluiceTypeError(
        'entries',
        text,
        `each entry must be a non-empty string of at most ${maxLength} characters, got ${describe(text)}`,
      );
  }
  return texts as string[];
}

/**
 * A limiter's access list as this process holds it: compiled for lookups (see AccessMatcher), read from its
 * store at start, again whenever another node's change is heard, and on a shared store every refreshMs (a
 * read of the version only, unless it moved). A read that fails keeps the list this process has (reported
 * through `onError`): the lists never fail a decision. Entries expire on the store's clock: each read's
 * expiry times are moved onto this process's clock by the store's time at the read, so a node or writer
 * whose clock is off shifts nothing (only the read's own latency).
 * @example
 * const list = new AccessList('api', binding, options, clock, report)
 * list.match('user:7', '10.1.2.3') // the entry that holds, if any
 */
export class AccessList {
  #matcher = AccessMatcher.of([]);
  #version: string | undefined;
  /** SLUICE_LIST_NO_ADDRESS was said for this limiter. */
  #warned = false;
  readonly #prefix: string;
  readonly #binding: AccessListBinding;
  readonly #clock: Clock;
  readonly #onError: (error: unknown) => void;
  /** Told whether the lists hold anything after each read: a limiter asks nothing of empty lists. */
  readonly #onLoaded: (holds: boolean) => void;
  readonly #unsubscribe: () => void;
  readonly #stopTimer: (() => void) | undefined;
  #reading: Promise<void> | undefined;
  /** A change was heard while a read was under way: one more read follows it. */
  #again = false;
  /** The first read: ready() waits for it. */
  readonly loaded: Promise<void>;

  constructor(
    prefix: string,
    binding: AccessListBinding,
    options: Required<AccessListOptions>,
    clock: Clock,
    onError: (error: unknown) => void,
    onLoaded: (holds: boolean) => void = () => {},
  ) {
    this.#onLoaded = onLoaded;
    this.#prefix = prefix;
    this.#binding = binding;
    this.#clock = clock;
    this.#onError = onError;
    this.#unsubscribe = binding.onChange(() => void this.refresh());
    this.#stopTimer = binding.remote ? repeat(() => void this.refresh(), options.refreshMs) : undefined;
    this.loaded = this.refresh();
  }

  /**
   * The entry that holds now for `key` and the client `address` the call gave (a checked one, see
   * addressOption), if any: one comparison while the lists are empty. A decision (not a peek) with no address
   * while the lists hold addresses or ranges is said once (SLUICE_LIST_NO_ADDRESS): they hold for none of it.
   */
  match(key: string, address: string | undefined, deciding = true): AccessEntry | undefined {
    const matcher = this.#matcher;
    if (matcher.empty) return undefined;
    if (address === undefined && deciding && matcher.hasRanges && !this.#warned) {
      this.#warned = true;
      warnOnce(
        'SLUICE_LIST_NO_ADDRESS',
        `limiter ${JSON.stringify(this.#prefix)}'s access lists hold IP addresses or ranges, and a decision gave no client address: no address or range entry can hold for it.`,
      );
    }
    return matcher.match(key, address, this.#clock.now());
  }

  /** Reads the list again (after a change heard, or on the timer): resolves after a read begun since; never rejects. */
  refresh(): Promise<void> {
    if (this.#reading !== undefined) {
      this.#again = true;
      // The read under way may predate the change: the one it starts as it ends (see below) does not.
      return this.#reading.then(() => this.#reading);
    }
    this.#reading = this.#read().finally(() => {
      this.#reading = undefined;
      if (this.#again) {
        this.#again = false;
        void this.refresh();
      }
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    try {
      const stored = await this.#binding.read(this.#version);
      if (stored.entries !== undefined) {
        const shift = this.#clock.now() - stored.now;
        const local = stored.entries.map((e) =>
          e.expiresAt === undefined ? e : { ...e, expiresAt: e.expiresAt + shift },
        );
        this.#matcher = AccessMatcher.of(local);
        this.#warnUnenforced();
        this.#onLoaded(!this.#matcher.empty);
      }
      this.#version = stored.version === '' ? undefined : stored.version;
    } catch (error) {
      this.#onError(error);
    }
  }

  /** Never silently skipped: an entry this version cannot enforce is named (once per process). */
  #warnUnenforced(): void {
    const unenforced = this.#matcher.unenforced;
    if (unenforced.length === 0) return;
    const named = unenforced
      .slice(0, 5)
      .map((u) => `${u.entry.list} ${JSON.stringify(u.entry.entry)} (${u.why})`)
      .join('; ');
    const more = unenforced.length > 5 ? ` and ${unenforced.length - 5} more` : '';
    warnOnce(
      'SLUICE_LIST_ENTRY_UNENFORCED',
      `limiter ${JSON.stringify(this.#prefix)}'s access lists hold entries it cannot enforce, which hold for no request: ${named}${more}.`,
    );
  }

  /** Every entry in force (expired ones left out), read from the store, in list then entry order. */
  async entries(): Promise<AccessEntry[]> {
    return entriesInForce(await this.#binding.read());
  }

  async put(entries: readonly NewAccessEntry[]): Promise<void> {
    await this.#binding.put(entries);
    await this.refresh();
  }

  async remove(texts: readonly string[]): Promise<number> {
    const removed = await this.#binding.remove(texts);
    await this.refresh();
    return removed;
  }

  close(): void {
    this.#stopTimer?.();
    this.#unsubscribe();
    this.#binding.unbind();
  }
}

/**
 * The entries of a read that hold at its time (the store's clock), in list then entry order: what
 * `limiter.accessList()`, the admin router and the CLI show.
 * @example
 * entriesInForce(await binding.read()) // [{ entry: '10.0.0.0/8', list: 'deny' }]
 */
export function entriesInForce(stored: StoredAccessList): AccessEntry[] {
  return (stored.entries ?? [])
    .filter((e) => e.expiresAt === undefined || e.expiresAt > stored.now)
    .sort((a, b) =>
      a.list !== b.list ? (a.list < b.list ? -1 : 1) : a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0,
    );
}
