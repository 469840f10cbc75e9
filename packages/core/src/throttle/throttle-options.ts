import type { Limiter } from '../engine/limiter-types.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { type SchemaOf, option, optional, required } from '../foundation/options.js';
import {
  DEFAULT_MAX_KEY_LENGTH,
  describe,
  nonNegativeInteger,
  positiveFinite,
  positiveInteger,
  rateLimitKey,
} from '../foundation/validate.js';

/** How a throttle orders its waiting calls. */
export type ThrottleOrder = 'fifo' | 'local';

/** A fetch function: the global one, or one of your own (undici's, a test double's). */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Options of `throttle`. */
export interface ThrottleOptions {
  /**
   * The limiter whose rules the calls obey (`{ rpm, tpm }` as a policy, say). Its store is where the
   * throttle's queue and pauses meet the other processes: one Redis store, one fleet-wide queue.
   */
  limiter: Limiter;
  /**
   * The key calls count against when `run` names none (one provider, one account).
   * @default 'default'
   */
  key?: string;
  /**
   * The most calls of one key that may wait for their turn in this process; one more is refused at once
   * with SluiceError('QUEUE_FULL'), so a flood of calls cannot grow memory without bound.
   * @default 10_000
   */
  maxQueue?: number;
  /**
   * 'fifo': calls start in the order they arrived (higher `priority` first) across every process sharing
   * the limiter's store; on Redis one queue per key, woken by pub/sub, never polled. 'local': each process
   * orders its own calls, and the processes meet only at the limiter (fewer Redis calls, no order between
   * processes). A store that keeps no queue (leasedStore, dividedStore, a store of your own) orders per
   * process either way.
   * @default 'fifo'
   */
  order?: ThrottleOrder;
  /**
   * How long a process that stops renewing keeps its turn (on Redis: a process killed while its call waits
   * for the rate frees the queue after this, plus a renewal interval). With order 'fifo' on a store that keeps
   * the queue and has a timeoutMs (redisStore), at least 4 x that timeoutMs.
   * @default 10_000, or 4 x that timeoutMs when that is longer
   */
  leaseMs?: number;
  /**
   * `throttle.fetch`: how many times one call is sent again after a 429 or 503 (each time once its turn
   * comes again, after the pause the response asked for).
   * @default 2
   */
  maxRetries?: number;
  /**
   * `throttle.fetch`: the longest pause a 429 or 503 may set, whatever its headers say (a provider asking
   * for an hour is held to this; the call is retried, or returned, after it).
   * @default 60_000
   */
  maxPauseMs?: number;
  /**
   * `throttle.fetch`: the pause after a 429 or 503 whose headers say nothing readable (and the least any
   * says: `Retry-After: 0` on a 429 still pauses this long).
   * @default 1_000
   */
  minPauseMs?: number;
  /**
   * `throttle.fetch`: the fetch it calls.
   * @default globalThis.fetch
   */
  fetch?: FetchFunction;
}

/** The key of a throttle whose options name none. */
export const DEFAULT_THROTTLE_KEY = 'default';
/** How many calls of one key may wait in one process unless `maxQueue` says otherwise. */
export const DEFAULT_MAX_QUEUE = 10_000;
/** How long a silent process keeps its turn unless `leaseMs` says otherwise. */
export const DEFAULT_TURN_LEASE_MS = 10_000;
/** How many times `throttle.fetch` sends a refused call again unless `maxRetries` says otherwise. */
export const DEFAULT_FETCH_RETRIES = 2;
/** The longest pause a response may set unless `maxPauseMs` says otherwise. */
export const DEFAULT_MAX_PAUSE_MS = 60_000;
/** The pause after a refusal that says nothing, and the least one, unless `minPauseMs` says otherwise. */
export const DEFAULT_PAUSE_MS = 1_000;

/** A limiter: what createLimiter returns. */
function limiterValue(name: string, value: unknown): Limiter {
  const candidate = value as Partial<Limiter> | null;
  if (
    typeof value !== 'object' ||
    candidate === null ||
    typeof candidate.tryAcquire !== 'function' ||
    typeof candidate.refund !== 'function' ||
    typeof candidate.penalize !== 'function' ||
    typeof candidate.store !== 'object'
  ) {
    throw new SluiceTypeError(name, value, `${name} must be a limiter made by createLimiter, got ${describe(value)}`);
  }
  return value as Limiter;
}

function orderValue(name: string, value: unknown): ThrottleOrder {
  if (value !== 'fifo' && value !== 'local') {
    throw new SluiceRangeError(name, value, `${name} must be 'fifo' or 'local', got ${describe(value)}`);
  }
  return value;
}

function maxQueueValue(name: string, value: unknown): number {
  return value === Infinity ? Infinity : positiveInteger(name, value);
}

function fetchValue(name: string, value: unknown): FetchFunction {
  if (typeof value !== 'function') {
    throw new SluiceTypeError(name, value, `${name} must be a fetch function, got ${describe(value)}`);
  }
  return value as FetchFunction;
}

function keyValue(_name: string, value: unknown): string {
  return rateLimitKey(value, DEFAULT_MAX_KEY_LENGTH);
}

/** throttle's options, checked (see parseOptions); documented on ThrottleOptions. */
export const THROTTLE_OPTIONS = {
  limiter: required(limiterValue),
  key: option(keyValue, DEFAULT_THROTTLE_KEY),
  maxQueue: option(maxQueueValue, DEFAULT_MAX_QUEUE),
  order: option(orderValue, 'fifo'),
  leaseMs: optional(positiveFinite),
  maxRetries: option(nonNegativeInteger, DEFAULT_FETCH_RETRIES),
  maxPauseMs: option(positiveFinite, DEFAULT_MAX_PAUSE_MS),
  minPauseMs: option(positiveFinite, DEFAULT_PAUSE_MS),
  fetch: optional(fetchValue),
} as const satisfies SchemaOf<ThrottleOptions>;
