import {
  type SmoothShape,
  burstyShape,
  rescaleStoredPermits,
  reserveEarliestAvailable,
  warmingUpShape,
} from '../algorithms/smooth-rate.js';
import { type Clock, optionalClock, systemClock, timerSleep } from '../foundation/clock.js';
import { SluiceError, SluiceRangeError, callerNamed } from '../foundation/errors.js';
import { type OptionNames, knownOptions } from '../foundation/options.js';
import {
  describe,
  nonNegativeFinite,
  positiveFinite,
  positiveInteger,
  positiveOrInfinite,
} from '../foundation/validate.js';

/** Options of `RateLimiter.create`: burst, warm-up and clock. */
export interface RateLimiterOptions {
  /**
   * SmoothBursty only: seconds of unused permits saved for a burst.
   * @default 1
   */
  maxBurstSeconds?: number;
  /**
   * SmoothBursty only: permits stored at creation.
   * @default 0, as Guava
   */
  initialPermits?: number;
  /**
   * Makes a SmoothWarmingUp limiter that climbs from cold to the stable rate over this many ms.
   * @default none: a SmoothBursty limiter
   */
  warmupMs?: number;
  /**
   * SmoothWarmingUp only: how many times slower than stable a cold limiter starts.
   * @default 3
   */
  coldFactor?: number;
  /**
   * Time for the rate and for sleeps (a ManualClock in tests).
   * @default systemClock
   */
  clock?: Clock;
}

const RATE_LIMITER_OPTIONS: OptionNames<RateLimiterOptions> = {
  maxBurstSeconds: true,
  initialPermits: true,
  warmupMs: true,
  coldFactor: true,
  clock: true,
};

/** Nothing is reserved for a caller that has already given up. */
function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new SluiceError('ABORTED', 'the signal was already aborted', { cause: signal.reason });
}

/**
 * A single-process limiter shaped like Guava's RateLimiter: synchronous `tryAcquire` and `reserve`,
 * asynchronous `acquire` and `tryAcquireWithin`. A request is granted at once when nothing is owed and
 * the next request pays for it. Times are milliseconds (Guava returns seconds).
 *
 * @example
 * const limiter = RateLimiter.create(5)           // 5 permits per second, evenly spaced
 * await limiter.acquire()                        // waits 0, then 200 ms, 200 ms, ...
 * if (limiter.tryAcquire()) handle()             // never waits
 * const warm = RateLimiter.create(100, { warmupMs: 10_000 })
 */
export class RateLimiter {
  readonly #clock: Clock;
  /** Times are read relative to creation: Guava's next free time is advanced on every grant, and at epoch
   * scale each advance would round (~0.24 us) and pile up. */
  readonly #origin: number;
  readonly #warmup: { warmupMs: number; coldFactor: number } | undefined;
  readonly #maxBurstSeconds: number;
  readonly #initialPermits: number;
  #shape: SmoothShape;
  #storedPermits = 0;
  #nextFreeMs: number;

  private constructor(permitsPerSecond: number, options: RateLimiterOptions) {
    this.#clock = optionalClock('clock', options.clock) ?? systemClock;
    this.#maxBurstSeconds =
      options.maxBurstSeconds === undefined ? 1 : nonNegativeFinite('maxBurstSeconds', options.maxBurstSeconds);
    this.#initialPermits =
      options.initialPermits === undefined ? 0 : nonNegativeFinite('initialPermits', options.initialPermits);
    if (options.warmupMs !== undefined) {
      const coldFactor = options.coldFactor === undefined ? 3 : positiveFinite('coldFactor', options.coldFactor);
      if (coldFactor < 1)
        throw new SluiceRangeError('coldFactor', coldFactor, `coldFactor must be >= 1, got ${coldFactor}`);
      this.#warmup = { warmupMs: positiveFinite('warmupMs', options.warmupMs), coldFactor };
    } else if (options.coldFactor !== undefined) {
      throw new SluiceRangeError('coldFactor', options.coldFactor, 'coldFactor applies only with warmupMs');
    }
    this.#origin = this.#clock.now();
    this.#nextFreeMs = 0;
    this.#shape = {
      stableIntervalMs: 0,
      maxPermits: 0,
      coolDownIntervalMs: 0,
      thresholdPermits: 0,
      slope: 0,
      warmingUp: false,
    };
    this.setRate(permitsPerSecond);
    if (this.#initialPermits > this.#shape.maxPermits) {
      throw new SluiceRangeError(
        'initialPermits',
        this.#initialPermits,
        `initialPermits must be at most the burst (${this.#shape.maxPermits}), got ${this.#initialPermits}`,
      );
    }
  }

  /**
   * Creates a SmoothBursty limiter, or SmoothWarmingUp when `warmupMs` is given. `permitsPerSecond` may
   * be Infinity (no limit until setRate).
   */
  static create(permitsPerSecond: number, options: RateLimiterOptions = {}): RateLimiter {
    try {
      knownOptions('RateLimiter options', RATE_LIMITER_OPTIONS, options, false);
      return new RateLimiter(permitsPerSecond, options);
    } catch (error) {
      throw callerNamed('RateLimiter.create', error);
    }
  }

  /** Changes the rate. Stored permits are rescaled; the next request still pays at the old rate. */
  setRate(permitsPerSecond: number): void {
    try {
      const rate = positiveOrInfinite('permitsPerSecond', permitsPerSecond);
      const now = this.#now();
      this.#resync(now);
      const oldMaxPermits = this.#shape.maxPermits;
      this.#shape = this.#warmup
        ? warmingUpShape(rate, this.#warmup.warmupMs, this.#warmup.coldFactor)
        : burstyShape(rate, this.#maxBurstSeconds);
      this.#storedPermits = rescaleStoredPermits(this.#storedPermits, oldMaxPermits, this.#shape, this.#initialPermits);
    } catch (error) {
      throw callerNamed('setRate', error);
    }
  }

  /** Permits per second. */
  getRate(): number {
    return 1000 / this.#shape.stableIntervalMs;
  }

  /** Takes `permits` if that needs no wait now; never waits. */
  tryAcquire(permits?: number): boolean {
    try {
      const p = permits === undefined ? 1 : positiveInteger('permits', permits);
      const now = this.#now();
      if (this.#nextFreeMs > now) return false;
      this.#reserveAt(p, now);
      return true;
    } catch (error) {
      throw callerNamed('tryAcquire', error);
    }
  }

  /** Commits `permits` now and returns the ms the caller must wait before using them. */
  reserve(permits?: number): number {
    try {
      const p = permits === undefined ? 1 : positiveInteger('permits', permits);
      return this.#reserveAt(p, this.#now());
    } catch (error) {
      throw callerNamed('reserve', error);
    }
  }

  /** Waits until `permits` are available; resolves to the ms waited. */
  async acquire(permits?: number, signal?: AbortSignal): Promise<number> {
    try {
      throwIfAborted(signal);
      const waitMs = this.reserve(permits);
      await this.#sleep(waitMs, signal);
      return waitMs;
    } catch (error) {
      throw callerNamed('acquire', error);
    }
  }

  /**
   * Takes `permits` if they can be had within `maxWaitMs` (a negative wait counts as 0, as in Guava),
   * sleeping the wait; resolves to false at once otherwise.
   */
  async tryAcquireWithin(maxWaitMs: number, permits?: number, signal?: AbortSignal): Promise<boolean> {
    try {
      if (typeof maxWaitMs !== 'number' || Number.isNaN(maxWaitMs)) {
        throw new SluiceRangeError('maxWaitMs', maxWaitMs, `maxWaitMs must be a number, got ${describe(maxWaitMs)}`);
      }
      const p = permits === undefined ? 1 : positiveInteger('permits', permits);
      throwIfAborted(signal);
      const now = this.#now();
      if (this.#nextFreeMs - Math.max(maxWaitMs, 0) > now) return false;
      await this.#sleep(this.#reserveAt(p, now), signal);
      return true;
    } catch (error) {
      throw callerNamed('tryAcquireWithin', error);
    }
  }

  #now(): number {
    return this.#clock.now() - this.#origin;
  }

  #resync(now: number): void {
    if (now > this.#nextFreeMs) {
      const r = reserveEarliestAvailable(this.#shape, this.#storedPermits, this.#nextFreeMs, 0, now);
      this.#storedPermits = r.storedPermits;
      this.#nextFreeMs = r.nextFreeMs;
    }
  }

  #reserveAt(permits: number, now: number): number {
    const r = reserveEarliestAvailable(this.#shape, this.#storedPermits, this.#nextFreeMs, permits, now);
    this.#storedPermits = r.storedPermits;
    this.#nextFreeMs = r.nextFreeMs;
    return Math.max(r.momentAvailableMs - now, 0);
  }

  #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (ms <= 0 && !signal?.aborted) return Promise.resolve();
    return this.#clock.sleep ? this.#clock.sleep(ms, signal) : timerSleep(ms, signal);
  }
}
