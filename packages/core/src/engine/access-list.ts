import { reportCallbackError } from '../foundation/callbacks.js';
import type { Clock } from '../foundation/clock.js';
import { repeat } from '../foundation/timers.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { describe, intervalMs } from '../foundation/validate.js';
import {
  type AccessEntry,
  type AccessListBinding,
  type AccessListName,
  MAX_ACCESS_ENTRIES,
} from './access-list-store.js';
import { AccessMatcher, isAddress, looksLikeRange, rangeOf } from './access-matcher.js';

/** Options of a limiter's `accessList`. */
export interface AccessListOptions {
  /**
   * The IP address a key stands for, to match the lists' addresses and ranges (undefined: none). By default
   * the address in the HTTP adapters' keys (`ip:203.0.113.7`; an IPv6 prefix key `ip:2001:db8::/56` as its
   * first address), or the key itself when it is an address (see addressOfKey).
   */
  addressOf?: (key: string) => string | undefined;
  /**
   * How often this process reads the list's version again on a shared store, whatever it heard: a missed
   * message heals within this. A change is heard at once otherwise.
   * @default DEFAULT_ACCESS_REFRESH_MS (10000)
   */
  refreshMs?: number;
}

/** How often a limiter checks a shared access list's version unless `accessList.refreshMs` says otherwise. */
export const DEFAULT_ACCESS_REFRESH_MS = 10_000;
/** The most entries one allow, deny or unlist call takes (a longer list goes in several calls). */
export const MAX_ENTRIES_PER_CALL = 10_000;
/** The longest reason an entry keeps. */
const MAX_REASON_LENGTH = 200;

/** Options of `limiter.allow` and `limiter.deny`. */
export interface ListEntryOptions {
  /** The entries hold this long, then stop (absent: until removed). */
  ttlMs?: number;
  /** Why (a denied request's decision carries it; the admin page and the CLI show it). At most 200 characters. */
  reason?: string;
}

/** The checked `accessList` option. */
export function accessListValue(name: string, value: unknown): Required<AccessListOptions> | false {
  if (value === false) return false;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SluiceTypeError(name, value, `${name} must be an options object or false, got ${describe(value)}`);
  const o = value as AccessListOptions;
  for (const option of Object.keys(o)) {
    if (option !== 'addressOf' && option !== 'refreshMs')
      throw new SluiceRangeError(`${name}.${option}`, option, `${name} takes addressOf, refreshMs; got ${option}`);
  }
  if (o.addressOf !== undefined && typeof o.addressOf !== 'function')
    throw new SluiceTypeError(`${name}.addressOf`, o.addressOf, `${name}.addressOf must be a function of the key`);
  const refreshMs = intervalMs(`${name}.refreshMs`, o.refreshMs ?? DEFAULT_ACCESS_REFRESH_MS, 100, 600_000);
  return { addressOf: o.addressOf ?? addressOfKey, refreshMs };
}

/**
 * The default `addressOf`: the address in a key as the HTTP adapters make them (`ip:203.0.113.7`, an IPv6
 * client's prefix `ip:2001:db8:0:100::/56` as its first address), or the key itself when it is an address.
 * @example
 * addressOfKey('ip:203.0.113.7') // '203.0.113.7'
 */
export function addressOfKey(key: string): string | undefined {
  const text = key.startsWith('ip:') ? key.slice(3) : key;
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  return isAddress(address) ? address : undefined;
}

/**
 * `entries` of `list` as the store keeps them, checked: each a non-empty string of at most `maxLength`
 * characters, text shaped as a range a valid CIDR range; at most MAX_ENTRIES_PER_CALL of them.
 * @example
 * listEntries('deny', ['10.0.0.0/8'], { reason: 'scan' }, 256, Date.now()) // [{ entry: '10.0.0.0/8', list: 'deny', reason: 'scan' }]
 */
export function listEntries(
  list: AccessListName,
  entries: unknown,
  options: ListEntryOptions | undefined,
  maxLength: number,
  nowMs: number,
): AccessEntry[] {
  const texts = entryTexts(entries, maxLength);
  if (options !== undefined && (typeof options !== 'object' || options === null))
    throw new SluiceTypeError('options', options, `${list} options must be an object, got ${describe(options)}`);
  const ttlMs = options?.ttlMs;
  if (ttlMs !== undefined && !(typeof ttlMs === 'number' && Number.isFinite(ttlMs) && ttlMs > 0))
    throw new SluiceRangeError('ttlMs', ttlMs, `ttlMs must be a positive number of ms, got ${describe(ttlMs)}`);
  const reason = options?.reason;
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON_LENGTH))
    throw new SluiceRangeError(
      'reason',
      reason,
      `reason must be a string of at most ${MAX_REASON_LENGTH} characters, got ${describe(reason)}`,
    );
  return texts.map((entry) => ({
    entry,
    list,
    ...(ttlMs === undefined ? {} : { expiresAt: nowMs + ttlMs }),
    ...(reason === undefined ? {} : { reason }),
  }));
}

/**
 * Entry texts, checked (see listEntries): one string or an array of them.
 * @example
 * entryTexts('10.0.0.0/8', 256) // ['10.0.0.0/8']
 */
export function entryTexts(entries: unknown, maxLength: number): string[] {
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
    if (looksLikeRange(text) && rangeOf(text) === undefined)
      throw new SluiceRangeError('entries', text, `${JSON.stringify(text)} is not a valid IPv4 or IPv6 CIDR range`);
  }
  return texts as string[];
}

/**
 * A limiter's access list as this process holds it: compiled for lookups (see AccessMatcher), read from its
 * store at start, again whenever another node's change is heard, and on a shared store every refreshMs (a
 * read of the version only, unless it moved). A read that fails keeps the list this process has (reported
 * through `onError`): the lists never fail a decision.
 * @example
 * const list = new AccessList(binding, options, clock, report)
 * list.match('10.1.2.3') // the entry that holds, if any
 */
export class AccessList {
  #matcher = AccessMatcher.of([]);
  #version: number | undefined;
  readonly #binding: AccessListBinding;
  readonly #addressOf: (key: string) => string | undefined;
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
    binding: AccessListBinding,
    options: Required<AccessListOptions>,
    clock: Clock,
    onError: (error: unknown) => void,
    onLoaded: (holds: boolean) => void = () => {},
  ) {
    this.#onLoaded = onLoaded;
    this.#binding = binding;
    this.#addressOf = options.addressOf;
    this.#clock = clock;
    this.#onError = onError;
    this.#unsubscribe = binding.onChange(() => void this.refresh());
    this.#stopTimer = binding.remote ? repeat(() => void this.refresh(), options.refreshMs) : undefined;
    this.loaded = this.refresh();
  }

  /** The entry that holds for `key` now, if any: one comparison while the lists are empty. */
  match(key: string): AccessEntry | undefined {
    const matcher = this.#matcher;
    if (matcher.empty) return undefined;
    let address: string | undefined;
    if (matcher.hasRanges) {
      try {
        address = this.#addressOf(key);
      } catch (error) {
        reportCallbackError(undefined, 'accessList.addressOf', error);
      }
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
        this.#matcher = AccessMatcher.of(stored.entries);
        this.#onLoaded(!this.#matcher.empty);
      }
      this.#version = stored.version;
    } catch (error) {
      this.#onError(error);
    }
  }

  /** Every entry in force (expired ones left out), read from the store, in list then entry order. */
  async entries(): Promise<AccessEntry[]> {
    const stored = await this.#binding.read();
    const now = this.#clock.now();
    return (stored.entries ?? [])
      .filter((e) => e.expiresAt === undefined || e.expiresAt > now)
      .sort((a, b) =>
        a.list !== b.list ? (a.list < b.list ? -1 : 1) : a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0,
      );
  }

  async put(entries: readonly AccessEntry[]): Promise<void> {
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
