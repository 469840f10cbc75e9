import type { ConcurrencyLimiter, Slot } from '../../concurrency/concurrency-limiter.js';
import type { Decision } from '../../foundation/decision.js';
import { SluiceError, SluiceRangeError, SluiceTypeError, inCall } from '../../foundation/errors.js';
import type { Limiter } from '../../engine/limiter-types.js';
import { knownOptions } from '../../foundation/options.js';
import { describe, nonNegativeOrInfinite, positiveFinite, positiveInteger } from '../../foundation/validate.js';
import { type SettleResponse, accountFor } from './after-response.js';
import { type HeaderFormat, rateLimitHeaders, seconds } from './headers.js';
import { type KeyStrategy, byIp, byIpSettings, clientAddressReader } from './keys.js';
import {
  CONCURRENCY_ROUTE_OPTIONS,
  type ConcurrencyRouteOptions,
  DEFAULT_CONCURRENCY_RETRY_AFTER_MS,
  type MissingKeyPolicy,
  RATE_LIMIT_OPTIONS,
  type RateLimitOptions,
  type RejectedBody,
} from './options.js';
import type { RequestView } from './view.js';

/** What the limiter made of one request, before any framework writes it out. */
export type Verdict<Res = unknown> =
  | {
      readonly kind: 'allowed';
      readonly decision: Decision;
      readonly headers: [string, string][];
      /** Call when the response is known (see SettleResponse); undefined when no after-response option is set. */
      readonly settle: SettleResponse<Res> | undefined;
    }
  | { readonly kind: 'limited'; readonly decision: Decision; readonly headers: [string, string][] }
  | { readonly kind: 'skipped' }
  | { readonly kind: 'rejected'; readonly body: RejectedBody }
  /** The client went away while its request waited (maxWaitMs, a concurrency wait): nothing was taken. */
  | { readonly kind: 'abandoned' };

/** An adapter's own ways to act on a verdict; `answerVerdict` decides which applies. */
export interface VerdictAnswers<R, Res = unknown> {
  /**
   * Let the request go on, with the RateLimit headers to send on its response (none when it was skipped),
   * and, when after-response accounting is configured, what to call once the response is known.
   */
  proceed(headers: readonly [string, string][], settle: SettleResponse<Res> | undefined): R;
  /** Answer 400: the request has no valid key or permits; nothing was consumed, and no rate-limit header is sent. */
  reject(body: RejectedBody): R;
  /** Answer a denial (the default: 429 with limitedBody), sending `headers` (Retry-After and RateLimit) with it. */
  limit(decision: Decision, headers: readonly [string, string][]): R;
}

/**
 * What every adapter does with a verdict, in one place: skipped and allowed go on, rejected is a 400, limited a 429.
 * @example
 * const verdict = await evaluate(req, view)
 * answerVerdict(verdict, { proceed: (headers) => next(), reject: (body) => reply(400, body), limit: (d, headers) => reply(429, limitedBody(d), headers) })
 */
export function answerVerdict<R, Res = unknown>(verdict: Verdict<Res>, answers: VerdictAnswers<R, Res>): R {
  switch (verdict.kind) {
    case 'skipped':
      return answers.proceed([], undefined);
    case 'rejected':
      return answers.reject(verdict.body);
    case 'allowed':
      return answers.proceed(verdict.headers, verdict.settle);
    case 'abandoned':
      // Nobody reads this answer: it only ends the request without running its handler.
      return answers.reject(ABANDONED_BODY);
    default:
      return answers.limit(verdict.decision, verdict.headers);
  }
}

const ABANDONED_BODY: RejectedBody = {
  error: 'Bad Request',
  message: 'the client went away while the request waited for its rate limit',
};

/** True when `error` is the abort of a wait whose client went away (`view.signal`). */
function clientLeft(error: unknown, view: RequestView): boolean {
  return error instanceof SluiceError && error.code === 'ABORTED' && view.signal?.aborted === true;
}

const MISSING_KEY_POLICIES: readonly MissingKeyPolicy[] = ['ip', 'skip', 'reject'];
const HEADER_FORMATS: readonly HeaderFormat[] = ['draft-8', 'draft-6', false];

function isLimiter(value: unknown): value is Limiter {
  const v = value as Partial<Limiter> | null;
  return typeof v === 'object' && v !== null && typeof v.tryAcquire === 'function' && Array.isArray(v.rules);
}

function isConcurrencyLimiter(value: unknown): value is ConcurrencyLimiter {
  const v = value as Partial<ConcurrencyLimiter> | null;
  return typeof v === 'object' && v !== null && typeof v.acquire === 'function' && typeof v.max === 'number';
}

/** The parsed `concurrency` option. */
interface ConcurrencyRoute {
  readonly limiter: ConcurrencyLimiter;
  readonly maxWaitMs: number;
  readonly retryAfterMs: number;
}

/** The `concurrency` option: a concurrencyLimiter, or one with its own wait and retry hint. */
function concurrencyOption(value: unknown): ConcurrencyRoute | undefined {
  if (value === undefined) return undefined;
  if (isConcurrencyLimiter(value))
    return { limiter: value, maxWaitMs: 0, retryAfterMs: DEFAULT_CONCURRENCY_RETRY_AFTER_MS };
  const o = value as Partial<ConcurrencyRouteOptions> | null;
  if (typeof o !== 'object' || o === null || !isConcurrencyLimiter(o.limiter)) {
    throw new SluiceTypeError(
      'concurrency',
      value,
      `concurrency must be a concurrencyLimiter(...) or { limiter, maxWaitMs?, retryAfterMs? }, got ${describe(value)}`,
    );
  }
  knownOptions('concurrency options', CONCURRENCY_ROUTE_OPTIONS, o, true);
  return {
    limiter: o.limiter,
    maxWaitMs: o.maxWaitMs === undefined ? 0 : nonNegativeOrInfinite('concurrency.maxWaitMs', o.maxWaitMs),
    retryAfterMs:
      o.retryAfterMs === undefined
        ? DEFAULT_CONCURRENCY_RETRY_AFTER_MS
        : positiveFinite('concurrency.retryAfterMs', o.retryAfterMs),
  };
}

/**
 * The answer to a request that got no slot: a denial by the pseudo-rule `concurrency`, told the route's retry
 * hint (when a slot frees is not known: it frees when a request in flight ends).
 */
function noSlot(route: ConcurrencyRoute): Decision {
  return {
    allowed: false,
    limit: route.limiter.max,
    remaining: 0,
    retryAfterMs: route.retryAfterMs,
    resetAfterMs: 0,
    waitMs: 0,
    rule: 'concurrency',
  };
}

/** Why a request got no slot: the limiter's answers that mean "not now"; anything else is a fault. */
const NO_SLOT_CODES = new Set(['WAIT_EXPIRED', 'QUEUE_FULL', 'STORE_UNAVAILABLE']);

/**
 * True for a typed argument error from sluice: a bad key or permits from the request, answered 400.
 * @example
 * try { await evaluate(req, view) } catch (e) { if (isInputError(e)) return reply(400, { error: e.message }) ; throw e }
 */
export function isInputError(error: unknown): error is SluiceTypeError | SluiceRangeError {
  return error instanceof SluiceTypeError || error instanceof SluiceRangeError;
}

/**
 * The framework-neutral half of every adapter: options checked once, then per request the key, the permits,
 * the decision and its header fields, from the framework's request and the adapter's view of it. `caller`
 * is the adapter's public name, which its errors say (`fetchRateLimit options have no option "x"`); `known`
 * names every option the adapter takes (RATE_LIMIT_OPTIONS and its own, as `limitedResponse`): any other is refused
 * by name.
 * @example
 * const evaluate = createEvaluator({ limiter, key: byIp() })
 * const verdict = await evaluate(req, nodeRequestView(req))
 */
export function createEvaluator<Req, Res = unknown>(
  options: RateLimitOptions<Req, Res>,
  caller = 'rateLimit',
  known: Readonly<Record<string, true>> = RATE_LIMIT_OPTIONS,
): (req: Req, view: RequestView) => Promise<Verdict<Res>> {
  return inCall(caller, () => {
    knownOptions(`${caller} options`, known, options, true);
    const { limiter } = options;
    const concurrency = concurrencyOption(options.concurrency);
    if (limiter !== undefined || concurrency === undefined) {
      if (!isLimiter(limiter)) {
        throw new SluiceTypeError(
          'limiter',
          limiter,
          `limiter must be a sluice Limiter (createLimiter(...)), or give concurrency, got ${describe(limiter)}`,
        );
      }
    }
    // The proxy settings: given here, else those of a byIp key, else none. The default key and the missing-key
    // fallback both read addresses with them, so a fallback never keys a proxied request by the proxy.
    const proxy =
      options.trustProxy !== undefined || options.proxyHeader !== undefined
        ? { trustProxy: options.trustProxy, proxyHeader: options.proxyHeader }
        : byIpSettings(options.key);
    const ipFallback = byIp(proxy);
    // The access lists match this address (read with the same settings), never the key, whatever the strategy.
    const addressOf = clientAddressReader(proxy);
    const key: KeyStrategy<Req> = options.key ?? ipFallback;
    if (typeof key !== 'function')
      throw new SluiceTypeError('key', key, `key must be a function of the request, got ${describe(key)}`);
    const missing = options.onMissingKey ?? 'ip';
    if (!MISSING_KEY_POLICIES.includes(missing)) {
      throw new SluiceRangeError(
        'onMissingKey',
        missing,
        `onMissingKey must be 'ip', 'skip' or 'reject', got ${describe(missing)}`,
      );
    }
    const format = options.headers ?? 'draft-8';
    if (!HEADER_FORMATS.includes(format)) {
      throw new SluiceRangeError(
        'headers',
        format,
        `headers must be 'draft-8', 'draft-6' or false, got ${describe(format)}`,
      );
    }
    const permitsOf = options.permits ?? 1;
    if (typeof permitsOf !== 'function') positiveInteger('permits', permitsOf);
    const maxWaitMs = options.maxWaitMs === undefined ? 0 : nonNegativeOrInfinite('maxWaitMs', options.maxWaitMs);
    const skip = options.skip;
    if (skip !== undefined && typeof skip !== 'function')
      throw new SluiceTypeError('skip', skip, `skip must be a function, got ${describe(skip)}`);
    const planOf = options.plan;
    if (planOf !== undefined && typeof planOf !== 'function')
      throw new SluiceTypeError('plan', planOf, `plan must be a function of the request, got ${describe(planOf)}`);
    const account = limiter === undefined ? accountFor(options, undefined) : accountFor(options, limiter);
    const reported = new Set<string>();
    const onInvalidInput =
      options.onInvalidInput ??
      ((error: Error) => {
        const argument = isInputError(error) ? error.argument : error.name;
        if (reported.has(argument)) return;
        reported.add(argument);
        console.error(`sluice ${caller}: a request was answered 400 (reported once per argument): ${error.message}`);
      });
    if (typeof onInvalidInput !== 'function') {
      throw new SluiceTypeError(
        'onInvalidInput',
        onInvalidInput,
        `onInvalidInput must be a function, got ${describe(onInvalidInput)}`,
      );
    }

    const keyOf = (req: Req, view: RequestView): string | undefined => {
      const k = key(req, view);
      if (typeof k === 'string' && k.length > 0) return k;
      if (k !== undefined && k !== null && k !== '') {
        throw new SluiceTypeError(
          'key',
          k,
          `the key strategy must return a string (or undefined for none), got ${describe(k)}`,
        );
      }
      return missing === 'ip' ? (ipFallback(req, view) ?? undefined) : undefined;
    };

    return async (req, view) => {
      if (skip?.(req) === true) return { kind: 'skipped' };
      let requestKey: string | undefined;
      let permits: number;
      try {
        requestKey = keyOf(req, view);
        permits = typeof permitsOf === 'function' ? permitsOf(req) : permitsOf;
      } catch (error) {
        if (!isInputError(error)) throw error;
        onInvalidInput(error, req);
        return {
          kind: 'rejected',
          body: { error: 'Bad Request', message: 'the request has no valid rate-limit key or permits' },
        };
      }
      if (requestKey === undefined) {
        if (missing === 'skip') return { kind: 'skipped' };
        return { kind: 'rejected', body: { error: 'Bad Request', message: 'the request has no rate-limit key' } };
      }
      let decision: Decision | undefined;
      let headers: [string, string][] = [];
      const startedAt = limiter === undefined ? 0 : limiter.clock.now();
      if (limiter !== undefined) {
        try {
          const plan = planOf === undefined ? undefined : await planOf(req);
          // Only a decision that waits listens for the client going away (reading the signal may make it).
          const signal = maxWaitMs > 0 ? view.signal : undefined;
          const address = addressOf(view);
          decision = await limiter.tryAcquire(requestKey, {
            permits,
            maxWaitMs,
            ...(plan === undefined ? {} : { plan }),
            ...(signal === undefined ? {} : { signal }),
            ...(address === undefined ? {} : { address }),
          });
        } catch (error) {
          if (clientLeft(error, view)) return { kind: 'abandoned' };
          if (!isInputError(error)) throw error;
          onInvalidInput(error, req);
          const what = error.argument === 'permits' ? 'permits are' : error.argument === 'plan' ? 'plan is' : 'key is';
          return {
            kind: 'rejected',
            body: { error: 'Bad Request', message: `the request's rate-limit ${what} invalid` },
          };
        }
        // Shadow mode: the headers the denial would have sent (Retry-After included), on a request let through.
        headers = rateLimitHeaders(
          decision.shadowed === true ? { ...decision, allowed: false } : decision,
          rulesOf(limiter, decision),
          format,
        );
        if (!decision.allowed) return { kind: 'limited', decision, headers };
      }
      let slot: Slot | undefined;
      if (concurrency !== undefined) {
        try {
          const signal = concurrency.maxWaitMs > 0 ? view.signal : undefined;
          slot = await concurrency.limiter.acquire(requestKey, {
            maxWaitMs: concurrency.maxWaitMs,
            ...(signal === undefined ? {} : { signal }),
          });
        } catch (error) {
          const left = clientLeft(error, view);
          if (!left && (!(error instanceof SluiceError) || !NO_SLOT_CODES.has(error.code))) throw error;
          // Not served: what the rate limit took is given back where its rules can (best effort).
          if (
            limiter !== undefined &&
            decision !== undefined &&
            decision.shadowed !== true &&
            limiter.rules.every((r) => r.scope !== undefined || r.refundable)
          ) {
            limiter
              .refund(requestKey, permits, {
                ...(decision.plan === undefined ? {} : { plan: decision.plan }),
                grantedMsAgo: limiter.clock.now() - startedAt,
                decision,
              })
              .catch(() => {});
          }
          if (left) return { kind: 'abandoned' };
          const busy = noSlot(concurrency);
          return {
            kind: 'limited',
            decision: busy,
            headers: [['Retry-After', String(Math.max(1, seconds(busy.retryAfterMs)))]],
          };
        }
      }
      const allowed = decision ?? {
        allowed: true,
        limit: concurrency?.limiter.max ?? 0,
        remaining: 0,
        retryAfterMs: 0,
        resetAfterMs: 0,
        waitMs: 0,
        rule: 'concurrency',
      };
      // A shadowed request took nothing, so no accounting is settled after it; a slot is always given back.
      const accounted =
        account === undefined || decision === undefined || decision.shadowed === true
          ? undefined
          : account(req, requestKey, permits, decision, startedAt);
      return { kind: 'allowed', decision: allowed, headers, settle: settleBoth(accounted, slot) };
    };
  });
}

/** What to do when the response ends: the accounting, and giving the request's slot back. */
function settleBoth<Res>(
  accounted: SettleResponse<Res> | undefined,
  slot: Slot | undefined,
): SettleResponse<Res> | undefined {
  if (slot === undefined) return accounted;
  return (res, end) => {
    void slot.release();
    accounted?.(res, end);
  };
}

/** The rules a decision came from: its plan's, for a limiter with plans. */
function rulesOf(limiter: Limiter, decision: Decision): Limiter['rules'] {
  return (decision.plan !== undefined ? limiter.plans?.[decision.plan] : undefined) ?? limiter.rules;
}
