import type { Decision } from './decision.js';

/** Why a sluice operation failed. Being rate limited is not an error: it is a {@link Decision}. */
export type SluiceErrorCode =
  /** The caller's AbortSignal fired while the call was waiting. */
  | 'ABORTED'
  /**
   * A call's wait budget (`maxWaitMs`) ran out, or cannot be met: a concurrency limiter's acquire got no slot
   * in time, a throttle's run could not start in time. Not a store's deadline (`timeoutMs`).
   */
  | 'WAIT_EXPIRED'
  /** A concurrency limiter's queue for the key already holds `maxQueue` waiting callers. */
  | 'QUEUE_FULL'
  /** The limiter or store was closed. */
  | 'CLOSED'
  /** The request can never be granted (permits above the limit), so waiting for it would never end. */
  | 'NEVER_ALLOWED'
  /** A rate-limited call that is contractually an exception (decorators), carrying its Decision. */
  | 'RATE_LIMITED'
  /**
   * The store could not do what was asked, and no fail mode can stand in (a `reset` while Redis is down or
   * read-only). `cause` holds the store's error.
   */
  | 'STORE_UNAVAILABLE'
  /**
   * The store cannot work with the Redis it was given, whatever the traffic: the Redis user lacks a command,
   * key or channel permission the store needs (the message names it), or the client's mode does not match
   * the server's (a standalone client on a Cluster node, a Cluster client on a standalone server).
   */
  | 'STORE_MISCONFIGURED'
  /**
   * A method decorator keyed by request (`key: byIp()`, `key: byUser(...)`) was called outside a request: no
   * sluice HTTP adapter or `requestContext()` is handling one here.
   */
  | 'NO_REQUEST'
  /**
   * Two live processes were given one `nodeId` (reported on a store's 'store-error'): each would have been
   * counted as the other in its limiters' fleets. The one that noticed went on under an id of its own; the
   * message names both ids. Nothing was over-admitted; give each process its own nodeId.
   */
  | 'NODE_ID_REUSED'
  /**
   * Another node changed the limiter's configuration first (`reconfigure` on a shared store): the message
   * names the version now in force. Nothing was changed; read `limiter.rules` and decide again.
   */
  | 'CONFLICT'
  /**
   * The limiter cannot honour this control: its store has no such operation (a store of your own), its mode
   * cannot keep it (bans in leased or divided mode), or a rule cannot (Guava's prepay cannot refund). The
   * message names what and why; nothing was changed.
   */
  | 'UNSUPPORTED'
  /** A throttle's ticket was settled already: its charge was corrected once, and is not corrected again. */
  | 'ALREADY_SETTLED';

/**
 * The one error class sluice throws for real faults. `code` tells what happened; `cause` keeps the
 * underlying error (an abort reason, a Redis error).
 *
 * @example
 * try { await limiter.acquire('user:1', { signal }) }
 * catch (e) { if (e instanceof SluiceError && e.code === 'ABORTED') return }
 */
export class SluiceError extends Error {
  override readonly name: string = 'SluiceError';
  readonly code: SluiceErrorCode;

  constructor(code: SluiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/**
 * A bad argument of the wrong type (a non-string key, a string rate). `argument` names the parameter;
 * `value` holds what was passed. Thrown before anything is consumed.
 * @example
 * try { createLimiter({ rules: 'fixed' as never }) } catch (e) { if (e instanceof SluiceTypeError) console.error(e.argument) }
 */
export class SluiceTypeError extends TypeError {
  override readonly name: string = 'SluiceTypeError';
  readonly code = 'INVALID_ARGUMENT' as const;
  constructor(
    readonly argument: string,
    readonly value: unknown,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A bad argument of the right type but out of range (NaN, negative, zero, fractional, too long).
 * `argument` names the parameter; `value` holds what was passed. Thrown before anything is consumed.
 * @example
 * try { fixedWindow({ limit: 0, windowMs: 1000 }) } catch (e) { if (e instanceof SluiceRangeError) console.error(e.argument, e.message) }
 */
export class SluiceRangeError extends RangeError {
  override readonly name: string = 'SluiceRangeError';
  readonly code = 'INVALID_ARGUMENT' as const;
  constructor(
    readonly argument: string,
    readonly value: unknown,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Thrown by APIs whose contract is to fail when limited (the `@rateLimit` method decorator): the call was
 * denied, after waiting up to its timeout. `decision` says by which rule and when to retry.
 *
 * @example
 * try { await codes.send(phone) }
 * catch (e) { if (e instanceof RateLimitedError) reply(429, e.decision.retryAfterMs) }
 */
export class RateLimitedError extends SluiceError {
  override readonly name: string = 'RateLimitedError';
  readonly decision: Decision;

  constructor(decision: Decision, message?: string) {
    super(
      'RATE_LIMITED',
      message ??
        `rate limited by rule ${JSON.stringify(decision.rule)} (limit ${decision.limit}); ` +
          (Number.isFinite(decision.retryAfterMs)
            ? `retry in ${Math.ceil(decision.retryAfterMs)} ms`
            : 'the request can never be granted'),
    );
    this.decision = decision;
  }
}

/**
 * The name of the public function a caller called, put first in a sluice error's message so every message
 * says which call failed (`fixedWindow: limit must be an integer >= 1, got 0`). Other errors (a user
 * callback's own) pass through untouched, and a message that already starts with the name is left as is.
 * @example
 * try { await work() } catch (error) { throw callerNamed('reset', error) }
 */
export function callerNamed(fn: string, error: unknown): unknown {
  const ours = error instanceof SluiceError || error instanceof SluiceTypeError || error instanceof SluiceRangeError;
  if (ours && !error.message.startsWith(fn)) error.message = `${fn}: ${error.message}`;
  return error;
}

/**
 * Runs `body`, the checks and work of the public function `fn`: its sluice errors name `fn` (see callerNamed).
 * @example
 * export function myStore(options: MyStoreOptions) {
 *   return inCall('myStore', () => new MyStore(options)) // 'myStore: maxKeys must be ...'
 * }
 */
export function inCall<T>(fn: string, body: () => T): T {
  try {
    return body();
  } catch (error) {
    throw callerNamed(fn, error);
  }
}
