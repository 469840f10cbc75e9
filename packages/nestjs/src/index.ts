/**
 * @sluice/nestjs: sluice rate limits for NestJS 11 and 12, on platform-express and platform-fastify.
 * `SluiceModule.forRoot` registers a global guard; `@RateLimit` and `@SkipRateLimit` mark controllers and
 * handlers. A 429 goes through Nest's exception layer with the headers and body every sluice adapter sends.
 * The key helpers (byIp, byUser, byRoute) are imported from `@sluice/core/http`, their one home.
 */
export { SluiceModule } from './module.js';
export { RateLimit, SkipRateLimit } from './decorators.js';
export { RateLimitException, SluiceGuard } from './guard.js';
export { SluiceContextInterceptor } from './context-interceptor.js';
export type { RouteLimitOptions, SluiceModuleAsyncOptions, SluiceModuleOptions } from './options.js';
export { GraphQLRefusal } from './contexts.js';
export type { SluiceContexts } from './contexts.js';
