import type { Algorithm } from './algorithms/algorithm.js';
import { type Clock, systemClock, timerSleep } from './clock.js';
import type { Decision } from './decision.js';
import { SluiceError, SluiceRangeError, SluiceTypeError } from './errors.js';
import { MemoryStore } from './memory-store.js';
import { type Rules, normalizeRules } from './policy.js';
import type { BoundStore, Store } from './store.js';
import {
  DEFAULT_MAX_KEY_LENGTH,
  describe,
  nonNegativeFinite,
  nonNegativeOrInfinite,
  optionalClock,
  optionalSignal,
  optionsObject,
  positiveInteger,
  rateLimitKey,
} from './validate.js';

export interface LimiterOptions {
  /** One rule, or a policy: a list of rules that must all allow (a denial consumes from none). */
  algorithm: Rules;
  /**
   * Where state lives.
   * @default a private memoryStore({ clock })
   */
  store?: Store;
  /**
   * Namespace of this limiter's keys in a shared store: letters, digits and `_ . - : /`, at most 100.
   * @default 'sluice'
   */
  prefix?: string;
  /**
   * Time for waiting (and, with the default store, for decisions).
   * @default the store's clock if it has one, else systemClock
   */
  clock?: Clock;
  /**
   * Longest key accepted; longer keys are refused with a SluiceRangeError.
   * @default 512
   */
  maxKeyLength?: number;
  /**
   * Up to this many ms are added at random to each retry sleep, so waiting callers on many nodes do not
   * all retry in the same instant. Never pushes a retry past the caller's deadline.
   * @default 2
   */
  retryJitterMs?: number;
  /**
   * A dry run before enforcing (Envoy's shadow mode): every request is allowed; one the rules would have
   * denied comes back with `shadowed: true` and the denial's numbers, and consumes nothing, exactly like a
   * denial. Nothing waits in shadow mode: a request is decided at once (a `timeoutMs` is not waited out), so
   * turning it on never adds latency. HTTP adapters send the headers they would have sent, never a 429.
   * @default false
   */
  shadow?: boolean;
}

export interface TryAcquireOptions {
  /** @default 1 */
  permits?: number;
  /**
   * How long the call may wait for the permits: sleeping off a reservation, or sleeping until a denied
   * request can succeed. 0 decides at once.
   * @default 0
   */
  timeoutMs?: number;
  /** Aborting rejects a waiting call with SluiceError('ABORTED'). */
  signal?: AbortSignal;
}

export interface AcquireOptions {
  /** @default 1 */
  permits?: number;
  signal?: AbortSignal;
}

/** A rate limiter bound to a store: the same interface for local, exact (Redis), leased and divided modes. */
export interface Limiter {
  /** Decides `permits` for `key`, waiting at most `timeoutMs`. Resolves to the Decision; never rejects for being limited. */
  tryAcquire(key: string, options?: TryAcquireOptions): Promise<Decision>;
  /** Waits until `permits` are granted; resolves to the ms waited. Rejects only on abort, close or a request that can never fit. */
  acquire(key: string, options?: AcquireOptions): Promise<number>;
  /** Reports the key's standing (for one permit) without consuming. */
  peek(key: string): Promise<Decision>;
  /** Forgets the key: its next request starts from a fresh state. */
  reset(key: string): Promise<void>;
  /** Stops the limiter: waiting calls reject with SluiceError('CLOSED'); a store it created is closed. */
  close(): Promise<void>;
  readonly rules: readonly Algorithm[];
  readonly prefix: string;
}

const PREFIX = /^[A-Za-z0-9_.\-:/]{1,100}$/;

class StoreLimiter implements Limiter {
  readonly rules: readonly Algorithm[];
  readonly prefix: string;
  readonly #clock: Clock;
  readonly #store: Store;
  readonly #ownsStore: boolean;
  readonly #bound: BoundStore;
  readonly #maxKeyLength: number;
  readonly #jitterMs: number;
  /** Only a single reserving rule can grant with a wait; a policy retries instead. */
  readonly #reserves: boolean;
  readonly #shadow: boolean;
  readonly #closing = new AbortController();
  /** Mirrors #closing.signal.aborted, which is a slow DOM getter on the hot path. */
  #closed = false;

  constructor(options: LimiterOptions) {
    optionsObject('createLimiter options', options, true);
    this.rules = normalizeRules(options.algorithm);
    const prefix = options.prefix ?? 'sluice';
    if (typeof prefix !== 'string') throw new SluiceTypeError('prefix', prefix, `prefix must be a string, got ${describe(prefix)}`);
    if (!PREFIX.test(prefix)) {
      throw new SluiceRangeError('prefix', prefix, `prefix must be 1-100 of [A-Za-z0-9_.-:/], got ${describe(prefix)}`);
    }
    this.prefix = prefix;
    this.#clock = optionalClock('clock', options.clock) ?? options.store?.clock ?? systemClock;
    this.#maxKeyLength =
      options.maxKeyLength === undefined ? DEFAULT_MAX_KEY_LENGTH : positiveInteger('maxKeyLength', options.maxKeyLength);
    this.#jitterMs = options.retryJitterMs === undefined ? 2 : nonNegativeFinite('retryJitterMs', options.retryJitterMs);
    this.#reserves = this.rules.length === 1 && (this.rules[0] as Algorithm).reserves;
    if (options.shadow !== undefined && typeof options.shadow !== 'boolean') {
      throw new SluiceTypeError('shadow', options.shadow, `shadow must be a boolean, got ${describe(options.shadow)}`);
    }
    this.#shadow = options.shadow === true;
    if (options.store === undefined) {
      const store = new MemoryStore({ clock: this.#clock });
      this.#store = store;
      this.#ownsStore = true;
      this.#bound = store.bind({ rules: this.rules, prefix }, true);
    } else {
      const store = options.store;
      if (typeof store !== 'object' || store === null || typeof store.bind !== 'function') {
        throw new SluiceTypeError('store', store, `store must be a sluice Store such as memoryStore(), got ${describe(store)}`);
      }
      // Decisions follow the store's clock and waits the limiter's: two different clocks would disagree.
      if (options.clock !== undefined && store.clock !== undefined && store.clock !== options.clock) {
        throw new SluiceRangeError('clock', options.clock, 'clock must be the clock the store was created with (pass it to the store, e.g. memoryStore({ clock }))');
      }
      this.#store = store;
      this.#ownsStore = false;
      this.#bound = store.bind({ rules: this.rules, prefix });
    }
  }

  #permits(value: unknown): number {
    return value === undefined ? 1 : positiveInteger('permits', value);
  }

  #checkOpen(): void {
    if (this.#closed) throw new SluiceError('CLOSED', 'the limiter is closed');
  }

  async tryAcquire(key: string, options?: TryAcquireOptions): Promise<Decision> {
    this.#checkOpen();
    rateLimitKey(key, this.#maxKeyLength);
    if (options === undefined) return this.#decideNow(key, 1);
    optionsObject('tryAcquire options', options, false);
    const permits = this.#permits(options.permits);
    const timeoutMs = options.timeoutMs === undefined ? 0 : nonNegativeOrInfinite('timeoutMs', options.timeoutMs);
    const signal = optionalSignal(options.signal);
    if (signal?.aborted) throw new SluiceError('ABORTED', 'the signal was already aborted', { cause: signal.reason });
    if (timeoutMs === 0 || this.#shadow) return this.#decideNow(key, permits);
    return this.#wait(key, permits, timeoutMs, signal);
  }

  /** One decision with no wait; in shadow mode a denial comes back allowed, marked shadowed. */
  #decideNow(key: string, permits: number): Decision | Promise<Decision> {
    const decision = this.#bound.consume(key, permits, 0);
    if (!this.#shadow) return decision;
    return decision instanceof Promise ? decision.then(shadowed) : shadowed(decision);
  }

  async acquire(key: string, options?: AcquireOptions): Promise<number> {
    this.#checkOpen();
    rateLimitKey(key, this.#maxKeyLength);
    optionsObject('acquire options', options, false);
    const permits = this.#permits(options?.permits);
    const signal = optionalSignal(options?.signal);
    if (signal?.aborted) throw new SluiceError('ABORTED', 'the signal was already aborted', { cause: signal.reason });
    const started = this.#clock.now();
    const d = this.#shadow ? await this.#decideNow(key, permits) : await this.#wait(key, permits, Infinity, signal);
    if (!d.allowed) {
      throw new SluiceError('NEVER_ALLOWED', `${permits} permits can never be granted by rule ${JSON.stringify(d.rule)} (limit ${d.limit})`);
    }
    return this.#clock.now() - started;
  }

  /**
   * Sleeps exactly what each decision says (a reservation's wait, or a denial's retryAfterMs plus jitter),
   * never polling, and gives up as soon as the deadline cannot be met.
   */
  async #wait(key: string, permits: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<Decision> {
    const deadline = this.#clock.now() + timeoutMs;
    const abort = signal === undefined ? this.#closing.signal : AbortSignal.any([signal, this.#closing.signal]);
    for (;;) {
      const now = this.#clock.now();
      const budget = Math.max(0, deadline - now);
      const d = await this.#bound.consume(key, permits, this.#reserves ? budget : 0);
      if (d.allowed) {
        if (d.waitMs > 0) await this.#sleep(d.waitMs, abort);
        return d;
      }
      // Infinity: never grantable (and Infinity > Infinity is false, so it needs its own check).
      if (d.retryAfterMs === Infinity || d.retryAfterMs > budget) return d;
      const jitter = this.#jitterMs === 0 ? 0 : Math.random() * this.#jitterMs;
      await this.#sleep(Math.min(d.retryAfterMs + jitter, budget), abort);
    }
  }

  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    try {
      await (this.#clock.sleep ? this.#clock.sleep(ms, signal) : timerSleep(ms, signal));
    } catch (error) {
      if (this.#closed) throw new SluiceError('CLOSED', 'the limiter was closed while waiting', { cause: error });
      throw error;
    }
  }

  async peek(key: string): Promise<Decision> {
    this.#checkOpen();
    rateLimitKey(key, this.#maxKeyLength);
    return this.#bound.peek(key);
  }

  async reset(key: string): Promise<void> {
    this.#checkOpen();
    rateLimitKey(key, this.#maxKeyLength);
    await this.#bound.reset(key);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort(new SluiceError('CLOSED', 'the limiter was closed'));
    // Unbound from a shared store, a closed limiter holds nothing there and frees its prefix.
    await this.#bound.unbind?.();
    if (this.#ownsStore) await this.#store.close();
  }
}

/** A denial as shadow mode reports it: allowed, marked, with the denial's numbers. */
function shadowed(decision: Decision): Decision {
  return decision.allowed ? decision : { ...decision, allowed: true, shadowed: true };
}

/**
 * Creates a limiter. The same call works over every store: memory (default), Redis, leased, divided.
 *
 * @example
 * const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 100, refillPerSecond: 10 }) })
 * const d = await limiter.tryAcquire(`user:${id}`)
 * if (!d.allowed) return tooManyRequests(d.retryAfterMs)
 */
export function createLimiter(options: LimiterOptions): Limiter {
  return new StoreLimiter(options);
}
