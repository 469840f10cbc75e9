import type { Decision, Limiter, Rules, Store } from '@sluice/core';
import type { RateLimitOptions } from '@sluice/core/http';
import type { DynamicModule, ExecutionContext, FactoryProvider } from '@nestjs/common';
import type { SluiceContexts } from './contexts.js';

/**
 * How a route is limited: a limiter of yours (any mode), or rules the module turns into a limiter of its own
 * (on the module's `store`), and the HTTP options every sluice adapter takes. Key and permits functions get
 * Nest's ExecutionContext; `byIp()` and `byRoute()` read the underlying Express or Fastify request. The
 * after-response callbacks (`permitsAfterResponse`, `requestWasSuccessful`) get the context and the platform's
 * response (Express's `res`, Fastify's `reply`).
 */
export interface RouteLimitOptions extends Partial<Omit<RateLimitOptions<ExecutionContext, unknown>, 'limiter'>> {
  /** A limiter of yours (any mode); give this or `algorithm`. */
  limiter?: Limiter;
  /** Rules for a limiter the module makes (prefix `Controller.handler`, or the controller's name). */
  algorithm?: Rules;
  /**
   * Shapes a refusal, for calls of every kind: gets the decision and the call's ExecutionContext and returns
   * the error the guard throws in place of its own (an HttpException of yours, a WsException with your
   * payload, an RpcException, a GraphQL error), or undefined to keep the guard's. May be async; what it
   * throws is thrown. Nest's exception filters are the other way: `RateLimitException` carries the decision.
   * @default the guard's own refusal
   */
  limitedError?: (decision: Decision, context: ExecutionContext) => Error | undefined | Promise<Error | undefined>;
}

/** SluiceModule.forRoot's options: route defaults, and optionally a limit for every route. */
export interface SluiceModuleOptions extends RouteLimitOptions {
  /**
   * Where limiters made from `algorithm` keep their state (a redisStore for a fleet).
   * @default an in-memory store per limiter
   */
  store?: Store;
  /**
   * Which kinds of handler the guard limits: HTTP routes, GraphQL resolvers and WebSocket gateway messages
   * unless set to `'skip'`; microservice handlers only when set to `'limit'` (their `key` reads the message).
   * A handler that would be limited in a kind of call the module does not limit fails the application's
   * start, naming it: nothing runs unlimited without your saying so.
   * @default { http: 'limit', graphql: 'limit', ws: 'limit' }
   */
  contexts?: SluiceContexts;
  /**
   * What one GraphQL decision counts: each resolver the guard runs for (top-level fields, and field resolvers
   * when enhancers run on them), or the operation once, at its first resolver.
   * @default 'resolver'
   */
  graphqlPer?: 'resolver' | 'operation';
}

/** SluiceModule.forRootAsync's options: Nest's factory-provider convention. */
export interface SluiceModuleAsyncOptions {
  /** Modules whose providers the factory injects (a Redis module, ConfigModule). */
  imports?: DynamicModule['imports'];
  /** The providers `useFactory` gets, in order. */
  inject?: FactoryProvider['inject'];
  /** Returns the module's options (may be async), given the injected providers. */
  useFactory(...args: unknown[]): SluiceModuleOptions | Promise<SluiceModuleOptions>;
}
