import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { SluiceContextInterceptor } from './context-interceptor.js';
import { SluiceGuard } from './guard.js';
import type { SluiceModuleAsyncOptions, SluiceModuleOptions } from './options.js';
import { SLUICE_MODULE_ASYNC_OPTIONS, SLUICE_MODULE_OPTIONS, checkRouteOptions } from './route-options.js';
import { SLUICE_OPTIONS } from './tokens.js';
import { SluiceRangeError, SluiceTypeError, createLimiter } from '@sluice/core';
import { describeValue, knownOptions, createEvaluator } from '@sluice/core/internal';
import { contextPolicies } from './contexts.js';

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
    return sluiceModule([], { provide: SLUICE_OPTIONS, useValue: checkedOptions(options, 'SluiceModule.forRoot') });
  }

  /**
   * The module with options made by a factory, as Nest's `forRootAsync` convention has it: for options that
   * need a provider first (a connected Redis client, a ConfigService). The options are checked when the
   * factory returns them, and the application's start waits for the store's start-up check either way.
   * @example
   * ```ts
   * SluiceModule.forRootAsync({
   *   imports: [RedisModule],
   *   inject: [REDIS],
   *   useFactory: (redis: Redis) => ({ store: redisStore({ redis }), algorithm: fixedWindow({ limit: 100, windowMs: 60_000 }) }),
   * })
   * ```
   */
  static forRootAsync(options: SluiceModuleAsyncOptions): DynamicModule {
    if (typeof options !== 'object' || options === null || typeof options.useFactory !== 'function') {
      throw new SluiceTypeError(
        'useFactory',
        (options as { useFactory?: unknown } | null)?.useFactory,
        'SluiceModule.forRootAsync needs { useFactory, inject?, imports? }: useFactory returns the module options',
      );
    }
    knownOptions('SluiceModule.forRootAsync options', SLUICE_MODULE_ASYNC_OPTIONS, options, true);
    return sluiceModule(options.imports ?? [], {
      provide: SLUICE_OPTIONS,
      useFactory: async (...args: unknown[]) =>
        checkedOptions(await options.useFactory(...args), 'SluiceModule.forRootAsync'),
      inject: [...(options.inject ?? [])],
    });
  }
}

/** The module's options, checked once: by the one parser every sluice adapter shares. */
function checkedOptions(options: SluiceModuleOptions, caller: string): SluiceModuleOptions {
  checkRouteOptions(`${caller} options`, options, false, SLUICE_MODULE_OPTIONS);
  contextPolicies(options.contexts);
  if (options.graphqlPer !== undefined && options.graphqlPer !== 'resolver' && options.graphqlPer !== 'operation') {
    throw new SluiceRangeError(
      'graphqlPer',
      options.graphqlPer,
      `graphqlPer must be 'resolver' or 'operation', got ${describeValue(options.graphqlPer)}`,
    );
  }
  if (options.limiter !== undefined || options.algorithm !== undefined) {
    const { contexts: _contexts, graphqlPer: _per, ...http } = options;
    createEvaluator(
      { ...http, limiter: options.limiter ?? createLimiter({ rules: options.algorithm as never }) },
      caller,
      SLUICE_MODULE_OPTIONS,
    );
  }
  return options;
}

/** The global module both forms return: its options provider, the guard, the request-context interceptor. */
function sluiceModule(imports: NonNullable<DynamicModule['imports']>, options: Provider): DynamicModule {
  return {
    module: SluiceModule,
    global: true,
    // Discovery lets the guard bind every route's limiter at start-up (see SluiceGuard.onApplicationBootstrap).
    imports: [...imports, DiscoveryModule],
    providers: [
      options,
      { provide: APP_GUARD, useClass: SluiceGuard },
      { provide: APP_INTERCEPTOR, useClass: SluiceContextInterceptor },
    ],
    // What the guard needs, for a `@UseGuards(SluiceGuard)` in any module (it decides a call once either way).
    exports: [SLUICE_OPTIONS, DiscoveryModule],
  };
}
