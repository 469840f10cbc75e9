/**
 * @sluice/core/http: rate limiting for HTTP servers. `rateLimit` is a `(req, res, next)` middleware for
 * node:http, Connect and Express; `rateLimitHook` / `fastifyRateLimit` do the same for Fastify.
 *
 * @module http
 */
export { rateLimit } from './middleware.js';
export type { MiddlewareOptions, Next } from './middleware.js';
export { fastifyRateLimit, rateLimitHook } from './fastify.js';
export type { FastifyHookDone, FastifyInstanceLike, FastifyRateLimitOptions } from './fastify.js';
export { currentRequestContext, requestContext } from './context.js';
export type { RequestContext } from './context.js';
export { byIp, byRoute, byUser } from './keys.js';
export type { AnyRequestKey, ByIpOptions, KeyStrategy, RequestKeyMark } from './keys.js';
export type { RequestView } from './view.js';
export { ipKey } from './ip.js';
export { rateLimitHeaders } from './headers.js';
export type { HeaderFormat } from './headers.js';
export type {
  ConcurrencyRouteOptions,
  LimitedBody,
  MissingKeyPolicy,
  RateLimitOptions,
  RejectedBody,
} from './options.js';
export type { AfterResponseOptions, ResponseEnd, SettleResponse } from './after-response.js';
export type { FastifyReplyLike, HttpRequestLike, HttpResponseLike } from './request.js';

// For adapter authors (@sluice/nestjs is built on these): the one options parser and evaluator every adapter
// uses, the view of a node-style request, the request context, and the JSON body of a 429.
export { answerVerdict, createEvaluator, isInputError } from './evaluate.js';
export type { Verdict, VerdictAnswers } from './evaluate.js';
export { runInRequestContext } from './context.js';
export { settleAfterBody, settleOnNodeResponse } from './response-end.js';
export type { AnsweredRequest, NodeResponseEvents } from './response-end.js';
export { clientGone, nodeRequestView, pathOf } from './view.js';
export {
  CONCURRENCY_ROUTE_OPTIONS,
  DEFAULT_CONCURRENCY_RETRY_AFTER_MS,
  RATE_LIMIT_OPTIONS,
  limitedBody,
  limitedResponseOption,
} from './options.js';
