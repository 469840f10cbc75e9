/**
 * @sluice/core/decorators: TypeScript 5 standard method decorators. `rateLimit` puts any limiter in front of
 * an async method; `countLimit` and `smoothRateLimit` build their own (the seed's two annotations).
 */
export { rateLimit } from './method-limit.js';
export type { AsyncMethod, MethodCall, MethodLimitDecorator, MethodLimitOptions } from './method-limit.js';
export { countLimit, smoothRateLimit } from './presets.js';
export type { CountLimitOptions, PresetOptions, SmoothRateLimitOptions } from './presets.js';
export { RateLimitedError } from '../errors.js';
