import { inCall, createEvaluator } from '@sluice/core/internal';
import { createLimiter } from '@sluice/core';
import { SetMetadata } from '@nestjs/common';
import type { RouteLimitOptions } from './options.js';
import { RATE_LIMIT, SKIP_RATE_LIMIT } from './tokens.js';
import { ROUTE_LIMIT_OPTIONS, checkRouteOptions } from './route-options.js';

/**
 * Limits a controller's routes or one handler: `@RateLimit({ algorithm: fixedWindow({ limit: 10, windowMs:
 * 60_000 }) })`, or `@RateLimit({ limiter })` with a limiter of yours, and/or `concurrency` (requests in
 * flight per key, released when the response ends); `key` and `permits` are functions of
 * Nest's ExecutionContext. A handler's `@RateLimit` overrides its controller's, which overrides the module's.
 * The options are checked here, when the class is defined: a bad one throws a typed error naming it.
 *
 * @example
 * ```ts
 * @RateLimit({ algorithm: tokenBucket({ capacity: 5, refillPerSecond: 1 }), key: byIp() })
 * @Post('login') login() { ... }
 * ```
 */
export function RateLimit(options: RouteLimitOptions): ClassDecorator & MethodDecorator {
  return inCall('@RateLimit', () => {
    checkRouteOptions('RateLimit options', options, true);
    // Every other option is checked by the one parser all sluice adapters share, against a throwaway limiter.
    const limiter =
      options.limiter ?? (options.algorithm === undefined ? undefined : createLimiter({ rules: options.algorithm }));
    createEvaluator({ ...options, limiter }, '@RateLimit', ROUTE_LIMIT_OPTIONS);
    return SetMetadata(RATE_LIMIT, options);
  });
}

/**
 * Exempts a controller or handler from every sluice limit (health checks, say).
 * @example
 * ```ts
 * @SkipRateLimit()
 * @Get('health')
 * health() { return 'ok' }
 * ```
 */
export function SkipRateLimit(): ClassDecorator & MethodDecorator {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}
