import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { SluiceContextInterceptor } from './context-interceptor.js';
import { SluiceGuard } from './guard.js';
import type { SluiceModuleOptions } from './options.js';
import { checkRouteOptions } from './route-options.js';
import { SLUICE_OPTIONS } from './tokens.js';
import { createLimiter } from '@sluice/core';
import { createEvaluator } from '@sluice/core/http';

/**
 * sluice for a Nest application: `SluiceModule.forRoot({ ... })` in the root module registers a global guard
 * (every HTTP route limited by its @RateLimit, its controller's, or the module's own `limiter` / `algorithm`
 * when given) and an interceptor that runs handlers in a request context (for sluice's method decorators).
 * @example
 * ```ts
 * @Module({ imports: [SluiceModule.forRoot({ algorithm: fixedWindow({ limit: 100, windowMs: 60_000 }), key: byIp() })] })
 * export class AppModule {}
 * ```
 */
@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest dynamic module is a class with a static forRoot.
export class SluiceModule {
  /**
   * @example
   * ```ts
   * @Module({ imports: [SluiceModule.forRoot({ algorithm: fixedWindow({ limit: 100, windowMs: 60_000 }), key: byIp() })] })
   * export class AppModule {}
   * ```
   */
  static forRoot(options: SluiceModuleOptions = {}): DynamicModule {
    checkRouteOptions('SluiceModule.forRoot options', options, false);
    if (options.limiter !== undefined || options.algorithm !== undefined) {
      createEvaluator(
        { ...options, limiter: options.limiter ?? createLimiter({ algorithm: options.algorithm as never }) },
        'SluiceModule.forRoot',
      );
    }
    return {
      module: SluiceModule,
      global: true,
      providers: [
        { provide: SLUICE_OPTIONS, useValue: options },
        { provide: APP_GUARD, useClass: SluiceGuard },
        { provide: APP_INTERCEPTOR, useClass: SluiceContextInterceptor },
      ],
    };
  }
}
