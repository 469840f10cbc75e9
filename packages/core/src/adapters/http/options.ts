import type { Decision } from '../../foundation/decision.js';
import { SluiceTypeError } from '../../foundation/errors.js';
import type { OptionNames } from '../../foundation/options.js';
import { describe } from '../../foundation/validate.js';
import type { ConcurrencyLimiter } from '../../concurrency/concurrency-limiter.js';
import type { Limiter } from '../../engine/limiter-types.js';
import type { AfterResponseOptions } from './after-response.js';
import { type HeaderFormat, seconds } from './headers.js';
import type { KeyStrategy } from './keys.js';

/**
 * What to do with a request whose `key` strategy found no key (no user signed in, say): `'ip'` limits it by
 * its client address instead, `'skip'` lets it through unlimited, `'reject'` answers 400. Never one shared
 * bucket for everyone by accident.
 */
export type MissingKeyPolicy = 'ip' | 'skip' | 'reject';

/**
 * Options of every HTTP adapter; `Req` is the framework's request type, `Res` what its after-response
 * callbacks get as the response (see AfterResponseOptions).
 */
export interface RateLimitOptions<Req, Res = unknown> extends AfterResponseOptions<Req, Res> {
  /** The limiter that decides: local, exact (Redis), leased or divided. Give this, `concurrency`, or both. */
  limiter?: Limiter | undefined;
  /**
   * Limits requests in flight per key (the same key as the rate limit): an allowed request takes a slot of
   * this concurrencyLimiter, waiting up to `maxWaitMs` for one, and gives it back when its response ends or
   * its connection closes. A request that gets no slot is answered 429 with rule `concurrency` (and the
   * permits the rate limit took are given back when its rules can).
   */
  concurrency?: ConcurrencyLimiter | ConcurrencyRouteOptions;
  /**
   * The request's key: byIp(), byUser(select), byRoute(), or any function of the request.
   * @default byIp()
   */
  key?: KeyStrategy<Req>;
  /**
   * What to do with a request whose `key` found none: limit it by its client address (`'ip'`), let it
   * through (`'skip'`), or answer 400 (`'reject'`).
   * @default 'ip'
   */
  onMissingKey?: MissingKeyPolicy;
  /**
   * How many reverse proxies you run in front of this server, for the default key (byIp) and for
   * `onMissingKey: 'ip'`; see ByIpOptions.trustProxy. When `key` is itself a byIp strategy, the fallback
   * reads addresses with that strategy's settings unless this is set.
   * @default 0
   */
  trustProxy?: number;
  /** Which header your proxies write; see ByIpOptions.proxyHeader. @default 'x-forwarded-for' */
  proxyHeader?: 'x-forwarded-for' | 'forwarded';
  /**
   * Permits the request takes: a number, or a function of the request (an integer >= 1; a request for more
   * than the limit is denied without Retry-After, as it can never pass).
   * @default 1
   */
  permits?: number | ((req: Req) => number);
  /**
   * Which RateLimit header fields to send: `'draft-8'`, `'draft-6'` or `false` for none.
   * `Retry-After` is sent on every denial regardless.
   * @default 'draft-8'
   */
  headers?: HeaderFormat;
  /**
   * How long a request may wait for its permits before it is denied (a queue in front of a slow API).
   * @default 0
   */
  maxWaitMs?: number;
  /** Requests for which this returns true are not limited (health checks, say). */
  skip?: (req: Req) => boolean;
  /**
   * The plan a request is decided under, for a limiter with plans (a customer's tier from the request):
   * one of the limiter's plan names, or undefined for the limiter's own choice (its `plan` resolver, else
   * its first plan). May be async.
   * @default the limiter's own choice
   */
  plan?: (req: Req) => string | undefined | Promise<string | undefined>;
  /**
   * Tells the developer about a request answered 400 because its key or permits were invalid (the client
   * gets a generic body; the typed error, naming the bad value, comes here).
   * @default console.error, once per argument name
   */
  onInvalidInput?: (error: Error, req: Req) => void;
}

/**
 * The names of RateLimitOptions, which each adapter's list of names spreads (adding its own, `limitedResponse`):
 * what createEvaluator refuses an unknown option against.
 */
export const RATE_LIMIT_OPTIONS: OptionNames<RateLimitOptions<unknown>> = {
  limiter: true,
  concurrency: true,
  key: true,
  onMissingKey: true,
  trustProxy: true,
  proxyHeader: true,
  permits: true,
  headers: true,
  maxWaitMs: true,
  skip: true,
  plan: true,
  onInvalidInput: true,
  skipSuccessfulRequests: true,
  skipFailedRequests: true,
  requestWasSuccessful: true,
  permitsAfterResponse: true,
  onAccountingError: true,
};

/** `concurrency` with its own wait. */
export interface ConcurrencyRouteOptions {
  /** The concurrencyLimiter whose slots the requests take, per key. */
  readonly limiter: ConcurrencyLimiter;
  /**
   * How long a request may wait for a slot (0: only a free one).
   * @default 0
   */
  readonly maxWaitMs?: number;
  /**
   * What a request that got no slot is told to wait (`Retry-After`, `retryAfterSeconds`). A hint, not a
   * promise: a slot frees when a request in flight ends, which nobody knows in advance.
   * @default 1 s (1000)
   */
  readonly retryAfterMs?: number;
}

/** The names of ConcurrencyRouteOptions. */
export const CONCURRENCY_ROUTE_OPTIONS: OptionNames<ConcurrencyRouteOptions> = {
  limiter: true,
  maxWaitMs: true,
  retryAfterMs: true,
};

/** The default `concurrency.retryAfterMs`: the retry hint of a request that got no slot. */
export const DEFAULT_CONCURRENCY_RETRY_AFTER_MS = 1_000;

/**
 * The JSON body of a 429. `retryAfterSeconds` is null when the request can never pass (more permits than the
 * limit); for a request that got no concurrency slot (rule `concurrency`) it is the route's retry hint.
 */
export interface LimitedBody {
  readonly error: 'Too Many Requests';
  readonly rule: string;
  readonly limit: number;
  readonly retryAfterSeconds: number | null;
  /**
   * When the limiter's deny list refused the request (not its rules): the entry's reason, or 'denied by the
   * access list' when it has none. The entry itself (a range, a key) is not sent.
   */
  readonly reason?: string;
}

/** The JSON body of a 400 for a request the limiter cannot take (no key, invalid permits). */
export interface RejectedBody {
  readonly error: 'Bad Request';
  readonly message: string;
}

/**
 * The JSON body of a 429 for `decision` (what every adapter sends unless `limitedResponse` says otherwise).
 * @example
 * res.statusCode = 429
 * res.end(JSON.stringify(limitedBody(decision)))
 */
export function limitedBody(decision: Decision): LimitedBody {
  return {
    error: 'Too Many Requests',
    rule: decision.rule,
    limit: decision.limit,
    retryAfterSeconds: Number.isFinite(decision.retryAfterMs) ? Math.max(1, seconds(decision.retryAfterMs)) : null,
    ...(decision.access?.list === 'deny' ? { reason: decision.access.reason ?? 'denied by the access list' } : {}),
  };
}

/**
 * Every adapter's `limitedResponse`: undefined (the default 429 body) or a function, checked once at construction.
 * @typeParam F the adapter's limitedResponse signature
 * @example
 * const limitedResponse = limitedResponseOption(options.limitedResponse) // undefined, or the checked function
 */
export function limitedResponseOption<F extends (...args: never[]) => unknown>(value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new SluiceTypeError('limitedResponse', value, `limitedResponse must be a function, got ${describe(value)}`);
  }
  return value;
}

/** The JSON body every adapter sends with a 400 or 429, and its content type. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
