import type { ConcurrencyStore } from '../engine/semaphore-store.js';
import { clockValue } from '../foundation/clock.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { type SchemaOf, option, optional, required } from '../foundation/options.js';
import {
  DEFAULT_MAX_KEY_LENGTH,
  DEFAULT_PREFIX,
  describe,
  positiveFinite,
  positiveInteger,
  prefixValue,
} from '../foundation/validate.js';
import type { Clock } from '../foundation/clock.js';

/** Options of `concurrencyLimiter`. */
export interface ConcurrencyLimiterOptions {
  /** Slots per key: how many callers may be inside at once (an integer >= 1). */
  max: number;
  /**
   * Where slots are counted: this process (a memoryStore, the default) or Redis (`redisStore({ redis })`),
   * where every process's holders meet.
   * @default a private memoryStore({ clock })
   */
  store?: ConcurrencyStore;
  /**
   * How long a holder that stops renewing keeps its slot on a shared store: a process killed inside its
   * critical section frees its slots after this (plus one renewal interval). Held slots are renewed every
   * leaseMs / 3 while they are held. (In this process's memory a holder cannot die apart from the store.)
   * @default 30_000
   */
  leaseMs?: number;
  /**
   * Namespace of this limiter's keys in a shared store (letters, digits and `_ . - : /`, at most 100).
   * @default 'sluice'
   */
  prefix?: string;
  /**
   * The most callers that may wait for one key in this process; one more is refused at once with
   * SluiceError('QUEUE_FULL'), so a flood of waiting callers cannot grow memory without bound.
   * @default Infinity
   */
  maxQueue?: number;
  /** Longest key accepted. @default 512 */
  maxKeyLength?: number;
  /**
   * Time for timeouts and lease renewals (a ManualClock in tests).
   * @default systemClock
   */
  clock?: Clock;
}

/** Below this a lease is renewed so often that a busy event loop could miss it. */
const MIN_LEASE_MS = 100;

/** How long a holder that stops renewing keeps its slot on a shared store unless `leaseMs` says otherwise. */
export const DEFAULT_LEASE_MS = 30_000;

/** A `store` option that counts slots. */
function concurrencyStoreValue(name: string, value: unknown): ConcurrencyStore {
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as Partial<ConcurrencyStore>).bindSemaphore !== 'function'
  ) {
    throw new SluiceTypeError(
      name,
      value,
      `${name} must be a store that counts slots (memoryStore(), redisStore({ redis })), got ${describe(value)}`,
    );
  }
  return value as ConcurrencyStore;
}

/** A lease long enough to be renewed in time: at least MIN_LEASE_MS. */
function leaseValue(name: string, value: unknown): number {
  const ms = positiveFinite(name, value);
  if (ms < MIN_LEASE_MS) {
    throw new SluiceRangeError(
      name,
      ms,
      `${name} must be at least ${MIN_LEASE_MS} ms (it is renewed every leaseMs / 3), got ${describe(ms)}`,
    );
  }
  return ms;
}

/** concurrencyLimiter's options, checked (see parseOptions); documented on ConcurrencyLimiterOptions. */
export const CONCURRENCY_LIMITER_OPTIONS = {
  max: required(positiveInteger),
  store: optional(concurrencyStoreValue),
  leaseMs: option(leaseValue, DEFAULT_LEASE_MS),
  prefix: option(prefixValue, DEFAULT_PREFIX),
  maxQueue: option(countOrInfinite, Infinity),
  maxKeyLength: option(positiveInteger, DEFAULT_MAX_KEY_LENGTH),
  clock: optional(clockValue),
} as const satisfies SchemaOf<ConcurrencyLimiterOptions>;

/** maxQueue: an integer >= 1, or Infinity. */
function countOrInfinite(name: string, value: unknown): number {
  return value === Infinity ? Infinity : positiveInteger(name, value);
}
