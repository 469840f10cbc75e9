/**
 * @sluice/core/http: rate limiting for HTTP servers. `rateLimit` is a `(req, res, next)` middleware for
 * node:http, Connect and Express; `rateLimitHook` / `fastifyRateLimit` do the same for Fastify.
 *
 * @module http
 */
export { rateLimit } from './middleware.js';
export type { MiddlewareOptions } from './middleware.js';
export { fastifyRateLimit, rateLimitHook } from './fastify.js';
export type { FastifyInstanceLike, FastifyRateLimitOptions } from './fastify.js';
export { currentRequestContext, requestContext } from './context.js';
export type { RequestContext } from './context.js';
export { byIp, byRoute, byUser } from './keys.js';
export type { ByIpOptions, KeyStrategy } from './keys.js';
export type { RequestView } from './view.js';
export { ipKey } from './ip.js';
export { rateLimitHeaders } from './headers.js';
export type { ConcurrencyRouteOptions, LimitedBody, RateLimitOptions } from './options.js';
export type { ResponseEnd } from './after-response.js';
export type { HttpRequestLike, HttpResponseLike } from './request.js';
