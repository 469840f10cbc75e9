/**
 * @sluice/core/decorators: method decorators (TypeScript 5 standard, and legacy ones as NestJS compiles).
 * `rateLimited` puts any limiter in front of an async method; `countLimit` (at most N calls per period) and
 * `smoothRateLimit` (calls spaced at a rate, with a saved burst) build their own limiter. (The HTTP
 * middleware is `rateLimit` from `@sluice/core/http`: one name per thing.) A denied call rejects with
 * RateLimitedError, imported from `@sluice/core`.
 *
 * @module decorators
 */
export { rateLimited } from './method-limit.js';
export type { MethodCall, MethodLimitOptions } from './method-limit.js';
export { countLimit, smoothRateLimit } from './presets.js';
export type { CountLimitOptions, SmoothRateLimitOptions } from './presets.js';
