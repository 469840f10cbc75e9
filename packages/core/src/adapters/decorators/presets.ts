import { inCall } from '../../foundation/errors.js';
import type { Algorithm } from '../../algorithms/algorithm.js';
import type { Clock } from '../../foundation/clock.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { smoothBursty } from '../../algorithms/smooth.js';
import { createLimiter } from '../../engine/limiter.js';
import type { Limiter } from '../../engine/limiter-types.js';
import type { Store } from '../../engine/store.js';
import { type OptionNames, knownOptions } from '../../foundation/options.js';
import {
  METHOD_LIMIT_OPTIONS,
  type MethodLimitDecorator,
  type MethodLimitOptions,
  rateLimited,
} from './method-limit.js';

/** Where a preset's own limiter keeps its state, and the call options of `rateLimited`. */
export interface PresetOptions extends Omit<MethodLimitOptions, 'limiter'> {
  /**
   * Where the preset's limiter keeps its state (a redisStore to share the limit across processes).
   * @default a private memory store
   */
  store?: Store;
  /** Namespace of the preset's keys in a shared store. @default 'sluice' */
  prefix?: string;
  /**
   * Time for waiting (and, with the default store, for decisions), as createLimiter's `clock`.
   * @default the store's clock if it has one, else systemClock
   */
  clock?: Clock;
}

/** Options of countLimit: at most `limit` calls per period, per key. */
export interface CountLimitOptions extends PresetOptions {
  /** Calls allowed per window. */
  limit: number;
  /** The window's length, in ms (aligned fixed windows). */
  windowMs: number;
}

/** Options of smoothRateLimit: calls spaced at a rate, with a saved burst, per key. */
export interface SmoothRateLimitOptions extends PresetOptions {
  /** The steady rate calls are spaced at. */
  permitsPerSecond: number;
  /** Seconds of unused rate that may be saved for a burst. @default 1 */
  maxBurstSeconds?: number;
}

/** A preset's names: the call options of rateLimited (its own limiter aside) and where its limiter keeps state. */
const { limiter: _limiter, ...CALL_OPTIONS } = METHOD_LIMIT_OPTIONS;
const PRESET_OPTIONS: OptionNames<PresetOptions> = { ...CALL_OPTIONS, store: true, prefix: true, clock: true };
const COUNT_LIMIT_OPTIONS: OptionNames<CountLimitOptions> = { ...PRESET_OPTIONS, limit: true, windowMs: true };
const SMOOTH_RATE_LIMIT_OPTIONS: OptionNames<SmoothRateLimitOptions> = {
  ...PRESET_OPTIONS,
  permitsPerSecond: true,
  maxBurstSeconds: true,
};

/** Builds the preset's limiter; the decorator keeps it for the life of the class. */
function presetLimiter(options: PresetOptions, algorithm: Algorithm): Limiter {
  const { store, prefix, clock } = options;
  return createLimiter({
    rules: algorithm,
    ...(store === undefined ? {} : { store }),
    ...(prefix === undefined ? {} : { prefix }),
    ...(clock === undefined ? {} : { clock }),
  });
}

/**
 * A count limit: at most `limit` calls per `windowMs` (a fixed window), per key: "2 codes per 10 s per
 * phone".
 *
 * @example
 * @countLimit({ limit: 1, windowMs: 60_000, key: ({ args }) => `phone:${String(args[0])}` })
 * async sendCode(phone: string) { ... }
 */
export function countLimit(options: CountLimitOptions): MethodLimitDecorator {
  return inCall('countLimit', () => {
    knownOptions('countLimit options', COUNT_LIMIT_OPTIONS, options, true);
    const { limit, windowMs, store: _s, prefix: _p, clock: _c, ...call } = options;
    return rateLimited({ ...call, limiter: presetLimiter(options, fixedWindow({ limit, windowMs })) });
  });
}

/**
 * A rate limit: calls spaced at `permitsPerSecond`, with up to `maxBurstSeconds` of unused rate saved for
 * a burst (Guava's SmoothBursty), per key: "one call per 5 s, with up to 5 s of saved calls".
 *
 * @example
 * @smoothRateLimit({ permitsPerSecond: 1 / 60, key: ({ args }) => `phone:${String(args[0])}` })
 * async sendCode(phone: string) { ... }
 */
export function smoothRateLimit(options: SmoothRateLimitOptions): MethodLimitDecorator {
  return inCall('smoothRateLimit', () => {
    knownOptions('smoothRateLimit options', SMOOTH_RATE_LIMIT_OPTIONS, options, true);
    const { permitsPerSecond, maxBurstSeconds, store: _s, prefix: _p, clock: _c, ...call } = options;
    const algorithm = smoothBursty({ permitsPerSecond, ...(maxBurstSeconds === undefined ? {} : { maxBurstSeconds }) });
    return rateLimited({ ...call, limiter: presetLimiter(options, algorithm) });
  });
}
