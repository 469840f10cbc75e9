import type { Decision } from '../../foundation/decision.js';
import { type Verdict, answerVerdict, createEvaluator } from './evaluate.js';
import type { OptionNames } from '../../foundation/options.js';
import {
  JSON_CONTENT_TYPE,
  RATE_LIMIT_OPTIONS,
  limitedBody,
  limitedResponseOption,
  type RateLimitOptions,
} from './options.js';
import type { HttpRequestLike, HttpResponseLike } from './request.js';
import { runInRequestContext } from './context.js';
import { settleOnNodeResponse } from './response-end.js';
import { nodeRequestView } from './view.js';

/** Options of rateLimit (node:http, Connect, Express); the after-response callbacks get `(req, res)`. */
export interface MiddlewareOptions<Req, Res> extends RateLimitOptions<Req, Res> {
  /**
   * Writes the response to a denied request instead of the default 429 with a JSON body. The rate-limit
   * headers and Retry-After are already set on `res`.
   * @default a 429 with a LimitedBody as JSON
   */
  limitedResponse?: (req: Req, res: Res, decision: Decision) => void;
}

const MIDDLEWARE_OPTIONS: OptionNames<MiddlewareOptions<unknown, unknown>> = {
  ...RATE_LIMIT_OPTIONS,
  limitedResponse: true,
};

/** `next` of Connect and Express; with plain node:http, pass your own. Called with an error only for faults. */
export type Next = (error?: unknown) => void;

function writeJson(res: HttpResponseLike, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.end(JSON.stringify(body));
}

/**
 * Rate-limits HTTP requests: a `(req, res, next)` middleware for node:http, Connect and Express. Allowed
 * requests go on to `next()` carrying the RateLimit headers; denied ones get 429, Retry-After, the headers
 * and a small JSON body. A fault (a store error its failMode did not absorb, a closed limiter) goes to
 * `next(error)`: nothing is thrown into the framework and no request hangs on the limiter.
 *
 * @example
 * app.use('/api', rateLimit({ limiter, key: byUser((req) => req.user?.id) }))
 */
export function rateLimit<
  Req extends HttpRequestLike = HttpRequestLike,
  Res extends HttpResponseLike = HttpResponseLike,
>(options: MiddlewareOptions<Req, Res>): (req: Req, res: Res, next: Next) => void {
  const evaluate = createEvaluator<Req, Res>(options, 'rateLimit', MIDDLEWARE_OPTIONS);
  const limitedResponse = limitedResponseOption(options.limitedResponse);
  const setHeaders = (res: Res, headers: readonly [string, string][]): void => {
    if (res.headersSent !== true) for (const [name, value] of headers) res.setHeader(name, value);
  };
  /** Writes a verdict that ends the request; true when the request goes on to next(). */
  const respond = (verdict: Verdict<Res>, req: Req, res: Res): boolean =>
    answerVerdict<boolean, Res>(verdict, {
      proceed: (headers, settle) => {
        setHeaders(res, headers);
        if (settle !== undefined) settleOnNodeResponse(res, res, settle);
        return true;
      },
      reject: (body) => {
        writeJson(res, 400, body);
        return false;
      },
      limit: (decision, headers) => {
        setHeaders(res, headers);
        if (limitedResponse !== undefined) limitedResponse(req, res, decision);
        else writeJson(res, 429, limitedBody(decision));
        return false;
      },
    });
  return (req, res, next) => {
    const view = nodeRequestView(req, res);
    evaluate(req, view).then(
      (verdict) => {
        let proceed: boolean;
        try {
          proceed = respond(verdict, req, res);
        } catch (error) {
          next(error);
          return;
        }
        // Outside the try: an error thrown by the rest of the chain is the framework's, not ours to route.
        // The rest of the request runs in its request context (decorators keyed by request read it).
        if (proceed) runInRequestContext({ request: req, view }, next);
      },
      (error: unknown) => next(error),
    );
  };
}
