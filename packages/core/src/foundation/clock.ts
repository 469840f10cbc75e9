import { SluiceError, SluiceRangeError, SluiceTypeError } from './errors.js';
import { type OptionNames, knownOptions } from './options.js';
import { describe } from './validate.js';

/**
 * Where sluice reads time, in milliseconds. `sleep` is how a limiter waits; clocks without it wait on
 * the host's timers.
 */
export interface Clock {
  /** The time in milliseconds. */
  now(): number;
  /** Resolves after `ms` on this clock; rejects with SluiceError('ABORTED') when `signal` fires. */
  sleep?(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortError(signal: AbortSignal): SluiceError {
  return new SluiceError('ABORTED', 'the wait was aborted', { cause: signal.reason });
}

/**
 * The longest delay a host timer takes: setTimeout fires after 1 ms (with a TimeoutOverflowWarning) for
 * anything above 2^31 - 1 ms, about 24.8 days, so longer waits are slept in chunks of at most this.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Waits `ms` on host timers, in chunks of at most MAX_TIMER_MS (a month-long wait sleeps a month, not 1 ms);
 * rejects with a SluiceError('ABORTED') when `signal` fires.
 * @example
 * await timerSleep(40 * 24 * 3_600_000, signal) // a 40-day wait, in timer-sized chunks
 */
export function timerSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    let left = Math.max(0, Math.ceil(ms));
    let timer: ReturnType<typeof setTimeout>;
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError(signal as AbortSignal));
    };
    const next = (): void => {
      const chunk = Math.min(left, MAX_TIMER_MS);
      left -= chunk;
      timer = setTimeout(() => {
        if (left > 0) return next();
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, chunk);
    };
    next();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Monotonic wall time: `performance.timeOrigin + performance.now()`. Unlike Date.now() it never steps
 * back when NTP adjusts the system clock, so a bucket can never be refilled twice.
 */
// Read once and bound once: on Node 20 the timeOrigin getter and the unbound `performance.now` lookup
// each cost as much as a clock read, and a decision pays for exactly one read.
const timeOrigin = performance.timeOrigin;
const monotonicNow = performance.now.bind(performance);
/** The default clock: monotonic wall time (`performance.timeOrigin + performance.now()`), host timers for sleeps. */
export const systemClock: Clock = {
  now: () => timeOrigin + monotonicNow(),
  sleep: timerSleep,
};

interface Sleeper {
  at: number;
  resolve: () => void;
}

/**
 * A clock that moves only when told to, for tests and simulations. Sleeps resolve when `advance` or
 * `set` passes their deadline; with `autoAdvance`, a sleep moves the clock itself (like Guava's fake
 * stopwatch), so code that sleeps runs instantly and deterministically.
 *
 * @example
 * const clock = new ManualClock(0)
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 1000 }), clock })
 * clock.advance(1000)
 */
export class ManualClock implements Clock {
  #now: number;
  readonly #autoAdvance: boolean;
  #sleepers: Sleeper[] = [];

  constructor(
    startMs = 0,
    options: {
      /**
       * A sleep moves the clock by its own length and resolves at once, so code that sleeps runs instantly.
       * @default false
       */
      autoAdvance?: boolean;
    } = {},
  ) {
    if (typeof startMs !== 'number' || !Number.isFinite(startMs)) {
      throw new SluiceRangeError('startMs', startMs, `startMs must be a finite number, got ${describe(startMs)}`);
    }
    knownOptions('ManualClock options', MANUAL_CLOCK_OPTIONS, options, false);
    this.#now = startMs;
    this.#autoAdvance = options.autoAdvance ?? false;
  }

  /** The current manual time in ms. */
  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` (>= 0) and wakes every sleeper whose deadline has come. */
  advance(ms: number): void {
    if (typeof ms !== 'number' || !(ms >= 0) || ms === Infinity) {
      throw new SluiceRangeError('ms', ms, `ms must be a finite number >= 0, got ${describe(ms)}`);
    }
    this.set(this.#now + ms);
  }

  /** Sets the time; it may step back (to test that algorithms never refill twice). */
  set(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) {
      throw new SluiceRangeError('ms', ms, `ms must be a finite number, got ${describe(ms)}`);
    }
    this.#now = ms;
    this.#wake();
  }

  /** How many sleeps are waiting for time to move. */
  get pendingSleeps(): number {
    return this.#sleepers.length;
  }

  /** Resolves when the clock has been advanced by `ms` (never by host time). */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.#autoAdvance) {
      if (ms > 0) this.set(this.#now + ms);
      return Promise.resolve();
    }
    if (!(ms > 0)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const sleeper: Sleeper = {
        at: this.#now + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(abortError(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }

  #wake(): void {
    const due = this.#sleepers.filter((s) => s.at <= this.#now);
    if (due.length === 0) return;
    this.#sleepers = this.#sleepers.filter((s) => s.at > this.#now);
    for (const s of due) s.resolve();
  }
}

const MANUAL_CLOCK_OPTIONS: OptionNames<NonNullable<ConstructorParameters<typeof ManualClock>[1]>> = {
  autoAdvance: true,
};

/**
 * An optional Clock option: anything with a now() function.
 * @example
 * const clock = optionalClock('clock', options.clock) ?? systemClock
 */
export function optionalClock(name: string, value: unknown): Clock | undefined {
  return value === undefined ? undefined : clockValue(name, value);
}

/**
 * A Clock option: anything with a now() function (and, if present, a sleep() function).
 * @example
 * const clock = option(clockValue, systemClock)
 */
export function clockValue(name: string, value: unknown): Clock {
  const now = (value as { now?: unknown } | null)?.now;
  if (typeof value !== 'object' || value === null || typeof now !== 'function') {
    throw new SluiceTypeError(
      name,
      value,
      `${name} must be a Clock ({ now(): number }, e.g. systemClock or a ManualClock), got ${describe(value)}`,
    );
  }
  const sleep = (value as { sleep?: unknown }).sleep;
  if (sleep !== undefined && typeof sleep !== 'function') {
    throw new SluiceTypeError(name, value, `${name}.sleep must be a function when present, got ${describe(sleep)}`);
  }
  return value as Clock;
}
