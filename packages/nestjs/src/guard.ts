import { type Decision, type Limiter, SluiceError, type Store, createLimiter } from '@sluice/core';
import {
  type Verdict,
  answerVerdict,
  createEvaluator,
  limitedBody,
  nodeRequestView,
  settleOnNodeResponse,
} from '@sluice/core/http';
import type { HttpRequestLike, RequestView } from '@sluice/core/http';
import {
  type CanActivate,
  type ExecutionContext,
  HttpException,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { RouteLimitOptions, SluiceModuleOptions } from './options.js';
import { RATE_LIMIT, SKIP_RATE_LIMIT, SLUICE_OPTIONS } from './tokens.js';

type Evaluate = (context: ExecutionContext, view: RequestView) => Promise<Verdict<unknown>>;

/** Express's response (`setHeader`) or Fastify's reply (`header`): where the RateLimit headers go. */
interface HeaderTarget {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
  /** Fastify's reply: the node response under it. */
  readonly raw?: unknown;
}

function setHeaders(response: HeaderTarget, headers: readonly [string, string][]): void {
  for (const [name, value] of headers) {
    if (typeof response.setHeader === 'function') response.setHeader(name, value);
    else response.header?.(name, value);
  }
}

/**
 * The global guard SluiceModule registers: for each HTTP request, the limit of its handler (@RateLimit on
 * the handler, else on its controller, else the module's), decided by the one evaluator every sluice adapter
 * uses. Allowed: the RateLimit headers are set and the handler runs. Limited: the headers are set and an
 * HttpException(429) carries the JSON body every adapter sends, through Nest's exception layer (your
 * filters see it). A key or cost the request cannot give is an HttpException(400).
 * @example
 * ```ts
 * // installed globally by SluiceModule.forRoot; on one controller instead:
 * @UseGuards(SluiceGuard)
 * @Controller('search') export class SearchController {}
 * ```
 */
@Injectable()
export class SluiceGuard implements CanActivate, OnApplicationBootstrap, OnModuleDestroy {
  readonly #reflector: Reflector;
  readonly #options: SluiceModuleOptions;
  readonly #discovery: DiscoveryService;
  readonly #scanner: MetadataScanner;
  /** One evaluator per `@RateLimit` options object (and the module's), with the limiter made for it. */
  readonly #evaluators = new Map<object, { evaluate: Evaluate; owned: Limiter | undefined }>();

  constructor(
    @Inject(Reflector) reflector: Reflector,
    @Inject(SLUICE_OPTIONS) options: SluiceModuleOptions,
    @Inject(DiscoveryService) discovery: DiscoveryService,
    @Inject(MetadataScanner) scanner: MetadataScanner,
  ) {
    this.#reflector = reflector;
    this.#options = options;
    this.#discovery = discovery;
    this.#scanner = scanner;
  }

  /**
   * Binds every route's limiter before the first request, so the module's store checks its Redis at start-up:
   * a misconfigured one (a permission the Redis user lacks, a client of the wrong mode) fails the application's
   * start with the error naming it, rather than its first requests being answered by the fail mode. A Redis
   * that is away at start-up is logged, and the fail mode answers until it is back.
   */
  async onApplicationBootstrap(): Promise<void> {
    for (const wrapper of this.#discovery.getControllers()) {
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | null | undefined;
      const instance = wrapper.instance as object | undefined;
      if (typeof type !== 'function' || instance === undefined || instance === null) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      const onClass = this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, type);
      for (const name of this.#scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler !== 'function') continue;
        if (this.#reflector.getAllAndOverride<boolean>(SKIP_RATE_LIMIT, [handler, type]) === true) continue;
        const onHandler = this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, handler);
        this.#evaluatorFor(onHandler ?? onClass, onHandler !== undefined ? `${type.name}.${name}` : type.name);
      }
    }
    await checkAtStartup(this.#options.store);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.#reflector.getAllAndOverride<boolean>(SKIP_RATE_LIMIT, targets) === true) return true;
    const onHandler = this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, context.getHandler());
    const route = onHandler ?? this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, context.getClass());
    const evaluate = this.#evaluatorFor(
      route,
      onHandler !== undefined ? `${context.getClass().name}.${context.getHandler().name}` : context.getClass().name,
    );
    if (evaluate === undefined) return true;
    const http = context.switchToHttp();
    const response = http.getResponse<HeaderTarget>();
    const verdict = await evaluate(
      context,
      nodeRequestView(http.getRequest<HttpRequestLike>(), response.raw ?? response),
    );
    return answerVerdict<boolean>(verdict, {
      proceed: (headers, settle) => {
        setHeaders(response, headers);
        // After-response accounting listens to the node response: Express's response is one, Fastify's reply holds one.
        if (settle !== undefined) settleOnNodeResponse(response.raw ?? response, response, settle);
        return true;
      },
      reject: (body) => {
        throw new HttpException(body, 400);
      },
      limit: (decision, headers) => {
        setHeaders(response, headers);
        throw new RateLimitException(decision);
      },
    });
  }

  /** The evaluator of a route's options (the module's when the route has none), made on first use. */
  #evaluatorFor(route: RouteLimitOptions | undefined, prefix: string): Evaluate | undefined {
    const options = route ?? this.#options;
    if (options.limiter === undefined && options.algorithm === undefined && options.concurrency === undefined)
      return undefined;
    let entry = this.#evaluators.get(options);
    if (entry === undefined) {
      const { store, limiter: _moduleLimiter, algorithm: _moduleRules, ...defaults } = this.#options;
      const owned =
        options.limiter === undefined && options.algorithm !== undefined
          ? createLimiter({
              rules: options.algorithm as never,
              prefix: route === undefined ? 'sluice-nestjs' : prefix,
              ...(store === undefined ? {} : { store }),
            })
          : undefined;
      const limiter = options.limiter ?? owned;
      entry = { evaluate: createEvaluator<ExecutionContext>({ ...defaults, ...options, limiter }), owned };
      this.#evaluators.set(options, entry);
    }
    return entry.evaluate;
  }

  /** Closes the limiters the module made (yours stay yours). */
  async onModuleDestroy(): Promise<void> {
    const owned = [...this.#evaluators.values()].flatMap((e) => (e.owned === undefined ? [] : [e.owned]));
    this.#evaluators.clear();
    await Promise.all(owned.map((limiter) => limiter.close()));
  }
}

/** Waits for a store's start-up checks (a store that has them: a Redis-backed one). */
async function checkAtStartup(store: Store | undefined): Promise<void> {
  const ready = (store as { ready?: () => Promise<void> } | undefined)?.ready;
  if (typeof ready !== 'function') return;
  try {
    await ready.call(store);
  } catch (error) {
    if (error instanceof SluiceError && error.code === 'STORE_MISCONFIGURED') throw error;
    const why = error instanceof Error ? error.message : String(error);
    new Logger('SluiceModule').warn(
      `the store's start-up check could not run; its failMode decides until it can: ${why}`,
    );
  }
}

/**
 * A 429 through Nest's exception layer, carrying the Decision for filters that want it.
 * @example
 * ```ts
 * @Catch(RateLimitException)
 * export class LimitedFilter implements ExceptionFilter {
 *   catch(e: RateLimitException, host: ArgumentsHost) { log.warn('limited', e.decision.retryAfterMs) }
 * }
 * ```
 */
export class RateLimitException extends HttpException {
  constructor(readonly decision: Decision) {
    super(limitedBody(decision), 429);
  }
}
