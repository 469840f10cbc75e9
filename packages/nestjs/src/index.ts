/**
 * @sluice/nestjs: sluice rate limits for NestJS 11 and 12, on platform-express and platform-fastify.
 * `SluiceModule.forRoot` registers a global guard; `@RateLimit` and `@SkipRateLimit` mark controllers and
 * handlers. A 429 goes through Nest's exception layer with the headers and body every sluice adapter sends.
 */
export { SluiceModule } from './module.js';
export { RateLimit, SkipRateLimit } from './decorators.js';
export { RateLimitException, SluiceGuard } from './guard.js';
export { SluiceContextInterceptor } from './context-interceptor.js';
export type { RouteLimitOptions, SluiceModuleAsyncOptions, SluiceModuleOptions } from './options.js';
export { GraphQLRefusal } from './contexts.js';
export type { ContextPolicy, SluiceContextType, SluiceContexts } from './contexts.js';
export { SLUICE_OPTIONS } from './tokens.js';
export { byIp, byRoute, byUser } from '@sluice/core/http';
