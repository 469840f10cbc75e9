import type { Clock } from '../foundation/clock.js';
import { repeat } from '../foundation/timers.js';
import type { Decision } from '../foundation/decision.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import type { OptionNames } from '../foundation/options.js';
import { describe, intervalMs, positiveInteger } from '../foundation/validate.js';
import { type HeavyHitter, HeavyHitters } from './heavy-hitters.js';
import { type BoardRow, type LimitedKeysBinding, byMostLimited, sumRows } from './limited-keys-board.js';

/** Options of a limiter's `limitedKeys`: what it remembers of the keys it limits. */
export interface LimitedKeysOptions {
  /**
   * How many keys each sketch holds (denied, and near the limit): fixed memory, whatever the traffic.
   * @default 64
   */
  capacity?: number;
  /**
   * A granted decision whose `remaining` is under this fraction of the limit counts as near the limit
   * (0 counts none).
   * @default 0.2
   */
  nearLimit?: number;
  /**
   * Show keys in clear in `topLimited`. Keys are often personal data (a user id, an address): left false,
   * `topLimited` shows each as a keyed hash (`limiter.keyHash(key)` gives the same hash for a key you have).
   * @default false
   */
  clearKeys?: boolean;
  /**
   * The secret of the keyed hash (HMAC-SHA-256): without it a hash of a guessable key (an email) can be
   * guessed back. Give every process the same secret, so their hashes match.
   * @default the limiter's prefix (not a secret: set one where keys are personal)
   */
  keySecret?: string;
  /**
   * How often this process adds what it counted to its store's board, where a fleet's counts meet (Redis
   * for the Redis stores): at most one call per interval, none while nothing was counted; the first after a
   * random half to whole interval, so nodes started together do not flush together.
   * @default 5000
   */
  flushMs?: number;
}

/** How often a limiter adds its counts to the store's board unless `limitedKeys.flushMs` says otherwise. */
export const DEFAULT_FLUSH_MS = 5_000;
/** The longest a closing limiter waits for its last flush. */
const CLOSE_FLUSH_MS = 1_000;
/** A board keeps this many times a sketch's capacity of each count per minute. */
const BOARD_KEEP_FACTOR = 4;

/** How many keys a limiter's sketches hold unless `limitedKeys.capacity` says otherwise. */
export const DEFAULT_LIMITED_KEYS = 64;
/** The fraction of the limit under which a grant counts as near the limit, unless `limitedKeys.nearLimit` says otherwise. */
export const DEFAULT_NEAR_LIMIT = 0.2;

/** Above this many denials and near-limit grants a second, the sketch samples them (see LimitedKeys). */
const FLOOD_PER_SECOND = 2_000;
/** How many offers pass between two looks at their rate. */
const RATE_CHECK_EVERY = 1_024;
/** In a flood, one offer in this many is counted, as this many. */
const SAMPLE_STRIDE = 16;

/** How many minutes `topLimited` looks back over unless told (this one included). */
export const DEFAULT_TOP_MINUTES = 5;

/** Options of `limiter.topLimited`. */
export interface TopLimitedOptions {
  /**
   * The minutes to sum (this one included), 1 to 15.
   * @default 5
   */
  minutes?: number;
}

/** The names of TopLimitedOptions. */
export const TOP_LIMITED_OPTIONS: OptionNames<TopLimitedOptions> = { minutes: true };

/** One of the keys a limiter limits most, as `topLimited` shows it. */
export interface LimitedKey {
  /** The key in clear (`clearKeys`), or its keyed hash. */
  readonly key: string;
  readonly hashed: boolean;
  /**
   * Requests of the key denied (a shadowed would-be denial counts), as the sketches count them (in a flood of
   * over 2,000 a second on one node, an estimate from one in 16).
   */
  readonly denied: number;
  /** Requests granted with less than `nearLimit` of the limit left. */
  readonly nearLimit: number;
  /**
   * How much of each count may belong to keys this one replaced in a node's sketch (Space-Saving's
   * overcount), summed over the nodes and minutes counted.
   */
  readonly error: number;
}

/** The checked `limitedKeys` option: the sketch's settings, or false for none. */
export function limitedKeysValue(name: string, value: unknown): Required<LimitedKeysOptions> | false {
  if (value === false) return false;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceTypeError(name, value, `${name} must be an options object or false, got ${describe(value)}`);
  }
  const o = value as LimitedKeysOptions;
  const known = ['capacity', 'nearLimit', 'clearKeys', 'keySecret', 'flushMs'];
  for (const option of Object.keys(o)) {
    if (!known.includes(option))
      throw new SluiceRangeError(`${name}.${option}`, option, `${name} takes ${known.join(', ')}; got ${option}`);
  }
  const capacity = o.capacity === undefined ? DEFAULT_LIMITED_KEYS : positiveInteger(`${name}.capacity`, o.capacity);
  if (capacity > 10_000)
    throw new SluiceRangeError(`${name}.capacity`, capacity, `${name}.capacity must be at most 10000, got ${capacity}`);
  const near = o.nearLimit ?? DEFAULT_NEAR_LIMIT;
  if (typeof near !== 'number' || !(near >= 0 && near < 1))
    throw new SluiceRangeError(`${name}.nearLimit`, near, `${name}.nearLimit must be in [0, 1), got ${describe(near)}`);
  if (o.clearKeys !== undefined && typeof o.clearKeys !== 'boolean')
    throw new SluiceTypeError(`${name}.clearKeys`, o.clearKeys, `${name}.clearKeys must be a boolean`);
  if (o.keySecret !== undefined && (typeof o.keySecret !== 'string' || o.keySecret.length === 0))
    throw new SluiceTypeError(`${name}.keySecret`, o.keySecret, `${name}.keySecret must be a non-empty string`);
  const flushMs = intervalMs(`${name}.flushMs`, o.flushMs ?? DEFAULT_FLUSH_MS, 100, 60_000);
  return { capacity, nearLimit: near, clearKeys: o.clearKeys ?? false, keySecret: o.keySecret ?? '', flushMs };
}

/**
 * What one limiter remembers of the keys it limits: a sketch of the keys it denies and one of the keys it
 * grants near their limit, each in fixed memory, since its last flush to its store's board (every flushMs
 * while it counts; the board sums every node's by minute). `see` is called with every decision; it only
 * compares two numbers unless the decision is a denial or near the limit.
 * @example
 * const limited = new LimitedKeys(options, board, clock)
 * limited.see('user:1', decision)
 * await limited.fleetTop(10, 5) // the fleet's most limited keys of the last 5 minutes
 */
export class LimitedKeys {
  readonly denied: HeavyHitters;
  readonly near: HeavyHitters;
  readonly #nearLimit: number;
  /** Offers since the rate was last looked at, and when that was (Date.now). */
  #offers = 0;
  #since = Date.now();
  /** 1: every offer counted; SAMPLE_STRIDE: one in that many, counting that many (a flood). */
  #stride = 1;
  /** xorshift32 state: which offers a flood's sample takes, without a pattern a key could fall between. */
  #random = 0x9e3779b9;

  readonly #board: LimitedKeysBinding;
  readonly #clock: Clock;
  /** The flush timer, while something was counted since the last flush found nothing. */
  #stopTimer: (() => void) | undefined;
  #flushing: Promise<void> | undefined;
  /** Rows on their way to the board: still this process's until it took them. */
  #sending: readonly BoardRow[] = [];

  constructor(
    readonly options: Required<LimitedKeysOptions>,
    board: LimitedKeysBinding,
    clock: Clock,
  ) {
    this.denied = new HeavyHitters(options.capacity);
    this.near = new HeavyHitters(options.capacity);
    this.#nearLimit = options.nearLimit;
    this.#board = board;
    this.#clock = clock;
  }

  see(key: string, decision: Decision): void {
    // A deny list's refusals are no rule's: the list already names those keys.
    if (!decision.allowed || decision.shadowed === true) {
      if (decision.access === undefined) this.#offer(this.denied, key);
    } else if (decision.remaining < decision.limit * this.#nearLimit) this.#offer(this.near, key);
  }

  /**
   * Counts `key` in `sketch`: every offer while they come slower than FLOOD_PER_SECOND, else one in
   * SAMPLE_STRIDE at random, counting SAMPLE_STRIDE (an unbiased estimate), so a flood of denials over many
   * keys, each a sketch replacement, costs the decision path a counter and a shift, not a map write.
   */
  #offer(sketch: HeavyHitters, key: string): void {
    if (this.#stopTimer === undefined) this.#arm();
    if (++this.#offers === RATE_CHECK_EVERY) {
      const now = Date.now();
      this.#stride = now - this.#since < (RATE_CHECK_EVERY * 1000) / FLOOD_PER_SECOND ? SAMPLE_STRIDE : 1;
      this.#since = now;
      this.#offers = 0;
    }
    if (this.#stride === 1) {
      sketch.offer(key);
      return;
    }
    let x = this.#random;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#random = x;
    if ((x >>> 0) % SAMPLE_STRIDE === 0) sketch.offer(key, SAMPLE_STRIDE);
  }

  /** A grant that left less than `nearLimit` of the limit. */
  isNear(decision: Decision): boolean {
    return decision.allowed && decision.shadowed !== true && decision.remaining < decision.limit * this.#nearLimit;
  }

  /** Flushes every flushMs from now until a flush finds nothing counted (the timer keeps no process alive). */
  #arm(): void {
    this.#stopTimer = repeat(() => {
      this.flush().catch(() => {
        // Kept for the next flush (see #flushNow): the board is statistics, a late flush loses nothing.
      });
    }, this.options.flushMs);
  }

  /**
   * Adds what this process counted since the last flush to the board, as the counts of this minute. Counts
   * the board could not take are counted here again, for the next flush; the call then rejects.
   */
  flush(): Promise<void> {
    this.#flushing ??= this.#flushNow().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #flushNow(): Promise<void> {
    const rows = this.#unflushed();
    if (rows.length === 0) {
      this.#stopTimer?.();
      this.#stopTimer = undefined;
      return;
    }
    this.denied.clear();
    this.near.clear();
    this.#sending = rows;
    try {
      await this.#board.add(minuteOf(this.#clock.now()), rows, this.options.capacity * BOARD_KEEP_FACTOR);
    } catch (error) {
      this.denied.merge(rows.filter((r) => r.denied > 0).map((r) => ({ key: r.key, count: r.denied, error: r.error })));
      this.near.merge(rows.filter((r) => r.nearLimit > 0).map((r) => ({ key: r.key, count: r.nearLimit, error: 0 })));
      throw error;
    } finally {
      this.#sending = [];
    }
  }

  /**
   * The `n` keys denied most (then most near the limit) over the last `minutes` minutes (this one
   * included), every node's counts on the board with this process's not yet flushed; keys in clear.
   */
  async fleetTop(n: number, minutes: number): Promise<BoardRow[]> {
    const now = minuteOf(this.#clock.now());
    const board = await this.#board.read(now - minutes + 1, now);
    return byMostLimited(sumRows([board, this.#sending, this.#unflushed()])).slice(0, n);
  }

  /**
   * Flushes what is left, waiting for it at most CLOSE_FLUSH_MS (statistics must not hold up a shutdown while
   * Redis is away), stops the timer, lets the board go.
   */
  async close(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        // Statistics: a closing limiter does not fail over them.
        this.flush().catch(() => undefined),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, CLOSE_FLUSH_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.#stopTimer?.();
      this.#stopTimer = undefined;
      this.#board.unbind();
    }
  }

  /** Both sketches' keys with their counts since the last flush. */
  #unflushed(): BoardRow[] {
    return this.top(this.options.capacity * 2);
  }

  /** The `n` keys denied most (then most near the limit), merged from both sketches, keys in clear. */
  top(n: number): Array<Omit<LimitedKey, 'hashed'>> {
    const byKey = new Map<string, { key: string; denied: number; nearLimit: number; error: number }>();
    const add = (entries: readonly HeavyHitter[], field: 'denied' | 'nearLimit') => {
      for (const e of entries) {
        const row = byKey.get(e.key) ?? { key: e.key, denied: 0, nearLimit: 0, error: 0 };
        row[field] = e.count;
        row.error = Math.max(row.error, e.error);
        byKey.set(e.key, row);
      }
    };
    add(this.denied.top(this.denied.capacity), 'denied');
    add(this.near.top(this.near.capacity), 'nearLimit');
    return byMostLimited([...byKey.values()]).slice(0, n);
  }
}

/** The minute a time falls in (ms since the epoch / 60,000, whole). */
const minuteOf = (ms: number): number => Math.floor(ms / 60_000);

const encoder = new TextEncoder();

/**
 * The keyed hash `topLimited` shows for a key: HMAC-SHA-256 under `secret`, its first 16 bytes in hex (Web
 * Crypto: every runtime sluice runs on).
 * @example
 * await keyHash('user:1', 'a secret') // '3f1c...'
 */
export async function keyHash(key: string, secret: string): Promise<string> {
  const subtle = globalThis.crypto.subtle;
  const hmacKey = await subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  const mac = new Uint8Array(await subtle.sign('HMAC', hmacKey, encoder.encode(key)));
  let hex = '';
  for (const byte of mac.subarray(0, 16)) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
