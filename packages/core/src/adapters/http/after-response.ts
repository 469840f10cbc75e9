import type { Decision } from '../../foundation/decision.js';
import { SluiceRangeError, SluiceTypeError } from '../../foundation/errors.js';
import { warnOnce } from '../../foundation/warnings.js';
import type { Limiter } from '../../engine/limiter-types.js';
import { describe } from '../../foundation/validate.js';

/**
 * Accounting once a response is known (every HTTP adapter): counting only failed or only successful
 * requests, and charging what a response really cost. `Res` is the adapter's response: node's
 * ServerResponse (node:http, Express, Connect), Fastify's reply, Koa's `ctx.response`, a Fetch `Response`
 * (Fetch handlers, Hono).
 */
export interface AfterResponseOptions<Req, Res> {
  /**
   * Give a request's permits back when its response succeeded (see requestWasSuccessful): only failures
   * count, as a login limit wants. Refunded once the response status is known.
   * @default false
   */
  skipSuccessfulRequests?: boolean;
  /**
   * Give a request's permits back when its response failed (status >= 400 by default), or the connection
   * closed before the response was sent: only successes count.
   * @default false
   */
  skipFailedRequests?: boolean;
  /**
   * Whether a response counts as a success for the two options above.
   * @default a response sent in full with a status below 400
   */
  requestWasSuccessful?: (req: Req, res: Res) => boolean;
  /**
   * Permits a response takes beyond the request's `permits`, known only once it is over (LLM tokens, bytes
   * sent): charged with `limiter.penalize` when the response ends, past the limit if need be, so the key
   * is denied until it drains. A negative number gives permits back (`limiter.refund`): charge an estimate
   * as `permits`, then settle the difference; never more than the request was charged (the excess is
   * reported to onAccountingError). An integer; 0 charges nothing.
   */
  permitsAfterResponse?: (req: Req, res: Res) => number;
  /**
   * Told of anything that went wrong after a response (a callback above that threw or gave a bad number,
   * a store that could not refund): the response was already sent, so there is no one else to tell.
   * @default the warning SLUICE_ACCOUNTING_FAILED (once per process)
   */
  onAccountingError?: (error: Error, req: Req) => void;
}

/** How a response ended: its status, and whether it was sent in full (false: the connection closed first, or the handler threw). */
export interface ResponseEnd {
  readonly status: number;
  readonly completed: boolean;
}

/** What an adapter calls, once, when the response of an allowed request is known; it never throws. */
export type SettleResponse<Res> = (res: Res, end: ResponseEnd) => void;

/**
 * The accounting a request gets: built per allowed request by `accountFor`, or undefined when none is
 * configured. `startedAt` is `limiter.clock.now()` from before the decision was asked for.
 */
export type Accounting<Req, Res> = (
  req: Req,
  key: string,
  permits: number,
  decision: Decision,
  startedAt: number,
) => SettleResponse<Res>;

function optionalFunction(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'function')
    throw new SluiceTypeError(name, value, `${name} must be a function, got ${describe(value)}`);
}

function optionalBoolean(name: string, value: unknown): boolean {
  if (value !== undefined && typeof value !== 'boolean')
    throw new SluiceTypeError(name, value, `${name} must be a boolean, got ${describe(value)}`);
  return value === true;
}

/** A permitsAfterResponse result: an integer (negative gives back), named in the error when it is not. */
function permitsAfter(value: unknown): number {
  if (typeof value !== 'number')
    throw new SluiceTypeError(
      'permitsAfterResponse',
      value,
      `permitsAfterResponse must return an integer, got ${describe(value)}`,
    );
  if (!Number.isSafeInteger(value))
    throw new SluiceRangeError(
      'permitsAfterResponse',
      value,
      `permitsAfterResponse must return an integer, got ${describe(value)}`,
    );
  return value;
}

/**
 * Checks the after-response options once, and returns what settles each allowed request, or undefined when
 * no option asks for it (nothing is listened to then). Refunds need rules that can give permits back: one
 * that cannot (Guava's prepay) is refused here, naming it.
 */
export function accountFor<Req, Res>(
  options: AfterResponseOptions<Req, Res>,
  limiter: Limiter | undefined,
): Accounting<Req, Res> | undefined {
  const skipSuccessful = optionalBoolean('skipSuccessfulRequests', options.skipSuccessfulRequests);
  const skipFailed = optionalBoolean('skipFailedRequests', options.skipFailedRequests);
  const { requestWasSuccessful, permitsAfterResponse, onAccountingError } = options;
  optionalFunction('requestWasSuccessful', requestWasSuccessful);
  optionalFunction('permitsAfterResponse', permitsAfterResponse);
  optionalFunction('onAccountingError', onAccountingError);
  if (!skipSuccessful && !skipFailed && permitsAfterResponse === undefined) return undefined;
  const option = skipSuccessful ? 'skipSuccessfulRequests' : skipFailed ? 'skipFailedRequests' : 'permitsAfterResponse';
  if (limiter === undefined)
    throw new SluiceTypeError(option, true, `${option} settles a rate limit's permits: it needs a limiter`);
  const rules = limiter.plans === undefined ? limiter.rules : Object.values(limiter.plans).flat();
  const unrefundable = rules.find((rule) => rule.scope === undefined && !rule.refundable);
  if (unrefundable !== undefined) {
    throw new SluiceTypeError(
      option,
      true,
      `${option} gives permits back, which rule ${JSON.stringify(unrefundable.name)} (${unrefundable.kind}) ` +
        `cannot: with Guava's prepay the next request pays for a grant`,
    );
  }
  const report = (error: unknown, req: Req): void => {
    const e = error instanceof Error ? error : new Error(String(error));
    if (onAccountingError !== undefined) {
      try {
        onAccountingError(e, req);
      } catch {
        // Its own failure has nowhere left to go.
      }
      return;
    }
    warnOnce('SLUICE_ACCOUNTING_FAILED', `accounting after a response (${option}) failed: ${e.message}.`);
  };

  return (req, key, permits, decision, startedAt) => {
    let settled = false;
    const plan = decision.plan === undefined ? {} : { plan: decision.plan };
    return (res, end) => {
      if (settled) return;
      settled = true;
      // A request never gives back more than it took, however many options ask.
      let refundable = permits;
      // Measured on the limiter's clock: the store's time, so a window rule finds the window the grant was in.
      // The decision sends the refund where the grant was counted (Redis, the fail mode's state, or nowhere).
      const refund = (n: number): Promise<void> => {
        const given = Math.min(n, refundable);
        refundable -= given;
        return given === 0
          ? Promise.resolve()
          : limiter.refund(key, given, {
              ...plan,
              grantedMsAgo: Math.max(0, limiter.clock.now() - startedAt),
              decision,
            });
      };
      const calls: Promise<void>[] = [];
      try {
        if (skipSuccessful || skipFailed) {
          const succeeded =
            end.completed &&
            (requestWasSuccessful === undefined ? end.status < 400 : requestWasSuccessful(req, res) === true);
          if (succeeded ? skipSuccessful : skipFailed) calls.push(refund(permits));
        }
        if (permitsAfterResponse !== undefined) {
          const after = permitsAfter(permitsAfterResponse(req, res));
          if (after > 0) calls.push(limiter.penalize(key, after, plan));
          else if (after < 0) {
            const left = refundable;
            calls.push(refund(-after));
            if (-after > left)
              report(
                new SluiceRangeError(
                  'permitsAfterResponse',
                  after,
                  `permitsAfterResponse gave back ${-after} permits for a request charged ${permits}: ${left} given ` +
                    `back, never more than the request took`,
                ),
                req,
              );
          }
        }
      } catch (error) {
        report(error, req);
      }
      for (const call of calls) call.catch((error: unknown) => report(error, req));
    };
  };
}
