import { type Decision, type Limiter, SluiceError, SluiceTypeError, type Store, createLimiter } from '@sluice/core';
import type { RequestView } from '@sluice/core/http';
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
import {
  describeValue,
  type Verdict,
  answerVerdict,
  createEvaluator,
  limitedBody,
  settleOnNodeResponse,
} from '@sluice/core/internal';
import {
  type ContextPolicy,
  contextPolicies,
  graphqlHttp,
  handlerType,
  isGrpcHandler,
  load,
  refusal,
  rpcView,
  typeOf,
  viewOf,
  wsDefaultKey,
} from './contexts.js';
import { guardGateways, sendRefusalToWsClient } from './gateways.js';
import { SLUICE_MODULE_OPTIONS } from './route-options.js';
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

function setHeaders(response: HeaderTarget | undefined, headers: readonly [string, string][]): void {
  if (typeof response !== 'object' || response === null) return;
  for (const [name, value] of headers) {
    if (typeof response.setHeader === 'function') response.setHeader(name, value);
    else response.header?.(name, value);
  }
}

/**
 * The global guard SluiceModule registers: for each call of a handler, the limit of that handler (@RateLimit
 * on the handler, else on its class, else the module's), decided by the one evaluator every sluice adapter
 * uses. An HTTP request allowed gets the RateLimit headers and runs; limited, the headers and an
 * HttpException(429) carrying the JSON body every adapter sends, through Nest's exception layer (your filters
 * see it); a key or permits the request cannot give is an HttpException(400). GraphQL, WebSocket and
 * microservice calls are refused in their framework's own way (see SluiceModuleOptions.contexts).
 * @example
 * ```ts
 * // installed globally by SluiceModule.forRoot; named again (to order it among a class's guards), it still
 * // decides each call once:
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
  /**
   * Per `@RateLimit` options object (and the module's): the limiter made for it, and one evaluator per kind of
   * call (a WebSocket message's default key is its connection and pattern, not an address).
   */
  readonly #evaluators = new Map<
    object,
    { owned: Limiter | undefined; byType: Map<string, Evaluate>; limitedError: LimitedError | undefined }
  >();
  /** With graphqlPer 'operation': each operation's verdict, by its GraphQL context object. */
  readonly #operations = new WeakMap<Evaluate, WeakMap<object, Promise<Verdict<unknown>>>>();
  readonly #contexts: Readonly<Record<string, ContextPolicy | undefined>>;

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
    this.#contexts = contextPolicies(options.contexts);
    guardGateways(discovery, this);
  }

  /**
   * Binds every handler's limiter before the first request, so the module's store checks its Redis at
   * start-up: a misconfigured one (a permission the Redis user lacks, a client of the wrong mode) fails the
   * application's start with the error naming it, rather than its first requests being answered by the fail
   * mode. A Redis that is away at start-up is logged, and the fail mode answers until it is back. Handlers of
   * every kind are found (HTTP routes, GraphQL resolvers, gateway messages, microservice patterns): one that
   * would be limited in a context the module does not limit fails the start, naming it (see `contexts`).
   */
  async onApplicationBootstrap(): Promise<void> {
    const unhandled: string[] = [];
    const grpc: string[] = [];
    const wrappers = [
      ...this.#discovery.getControllers().map((wrapper) => [wrapper, true] as const),
      ...this.#discovery.getProviders().map((wrapper) => [wrapper, false] as const),
    ];
    for (const [wrapper, isController] of wrappers) {
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | null | undefined;
      const instance = wrapper.instance as object | undefined;
      if (typeof type !== 'function' || instance === undefined || instance === null) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      const onClass = this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, type);
      for (const name of this.#scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler !== 'function') continue;
        const metadata = (key: string, target: object) => this.#reflector.get(key, target as never);
        const kind = handlerType(type, handler, isController, metadata);
        if (kind === undefined) continue;
        if (this.#reflector.getAllAndOverride<boolean>(SKIP_RATE_LIMIT, [handler, type]) === true) continue;
        const onHandler = this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, handler);
        const route = onHandler ?? onClass;
        const where = `${type.name}.${name}`;
        const policy = this.#contexts[kind];
        if (policy === 'skip' || !limits(route ?? this.#options)) continue;
        // A gRPC call has its peer's address (the default key, byIp); other messages have none.
        const isGrpc = kind === 'rpc' && isGrpcHandler(handler, metadata);
        if (policy === undefined) unhandled.push(`${where} (${kind})`);
        else if (kind === 'rpc' && !isGrpc && (route?.key ?? this.#options.key) === undefined)
          unhandled.push(`${where} (rpc, no key: a message has no client address to key by)`);
        else {
          this.#evaluatorFor(route, onHandler !== undefined ? where : type.name, kind);
          if (isGrpc) grpc.push(where);
        }
      }
    }
    if (unhandled.length > 0) {
      throw new SluiceError(
        'UNSUPPORTED',
        `SluiceModule: these handlers would run unlimited: ${unhandled.join(', ')}. Limit them with contexts: ` +
          "{ rpc: 'limit' } and a key that reads the message, or let them through with contexts: { rpc: 'skip' } " +
          '(or @SkipRateLimit on the handler)',
      );
    }
    if (grpc.length > 0) {
      // A gRPC refusal is the status @sluice/grpc makes (RESOURCE_EXHAUSTED, retry metadata): without it, UNKNOWN.
      await load('@sluice/grpc').catch((error: unknown) => {
        throw new SluiceError(
          'UNSUPPORTED',
          `SluiceModule: ${grpc.join(', ')} ${grpc.length === 1 ? 'is a gRPC method' : 'are gRPC methods'}, refused ` +
            'with the status @sluice/grpc makes: install @sluice/grpc beside @sluice/nestjs',
          { cause: error },
        );
      });
    }
    await checkAtStartup(this.#options.store);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    // One decision per call: Nest hands every guard of a call one context, and this guard may be among them
    // twice (the global guard, and on a gateway or under @UseGuards(SluiceGuard) the class's own).
    if (decided.has(context)) return true;
    decided.add(context);
    const type = typeOf(context);
    if (type !== 'ws') return this.#decide(type, context);
    try {
      return await this.#decide(type, context);
    } catch (error) {
      await sendRefusalToWsClient(context, error);
      throw error;
    }
  }

  async #decide(type: string, context: ExecutionContext): Promise<boolean> {
    const policy = this.#contexts[type];
    if (policy === 'skip') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.#reflector.getAllAndOverride<boolean>(SKIP_RATE_LIMIT, targets) === true) return true;
    const onHandler = this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, context.getHandler());
    const route = onHandler ?? this.#reflector.get<RouteLimitOptions | undefined>(RATE_LIMIT, context.getClass());
    if (!limits(route ?? this.#options)) return true;
    const where = `${context.getClass().name}.${context.getHandler().name}`;
    if (policy === undefined) {
      // A kind of call the module was not told about (a custom transport's): refused, never let through.
      throw new SluiceError(
        'UNSUPPORTED',
        `SluiceModule: ${where} runs in a '${type}' context, which the module does not limit: declare ` +
          `contexts: { ${type}: 'limit' } (with a key that reads the call) or { ${type}: 'skip' }`,
      );
    }
    const evaluate = this.#evaluatorFor(route, onHandler !== undefined ? where : context.getClass().name, type);
    if (evaluate === undefined) return true;
    if (type === 'http') return this.#http(context, evaluate, route);
    const verdict = await this.#once(type, context, evaluate);
    if (type === 'graphql') {
      const { res } = graphqlHttp(context);
      if (verdict.kind === 'allowed' || verdict.kind === 'limited') setHeaders(res as HeaderTarget, verdict.headers);
      if (verdict.kind === 'allowed' && verdict.settle !== undefined && isNodeResponse(res))
        settleOnNodeResponse(res, res, verdict.settle);
    }
    if (verdict.kind === 'limited')
      throw (await this.#shaped(route, verdict.decision, context)) ?? (await refusal(type, verdict, context));
    if (verdict.kind === 'rejected' || verdict.kind === 'abandoned') throw await refusal(type, verdict, context);
    return true;
  }

  /** An HTTP route's verdict, answered on its response (headers, a 429 through Nest's exception layer). */
  async #http(context: ExecutionContext, evaluate: Evaluate, route: RouteLimitOptions | undefined): Promise<boolean> {
    const http = context.switchToHttp();
    const response = http.getResponse<HeaderTarget>();
    const verdict = await evaluate(context, viewOf('http', context));
    const shaped = verdict.kind === 'limited' ? await this.#shaped(route, verdict.decision, context) : undefined;
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
        throw shaped ?? new RateLimitException(decision);
      },
    });
  }

  /** The error `limitedError` (the handler's, else the module's) shapes for a refusal, or undefined for the guard's own. */
  async #shaped(route: RouteLimitOptions | undefined, decision: Decision, context: ExecutionContext) {
    const limitedError = this.#evaluators.get(route ?? this.#options)?.limitedError;
    if (limitedError === undefined) return undefined;
    const shaped = await limitedError(decision, context);
    if (shaped === undefined || shaped instanceof Error) return shaped;
    throw new SluiceTypeError(
      'limitedError',
      shaped,
      `limitedError must return an Error to throw, or undefined for the guard's own refusal; got ${describeValue(shaped)}`,
    );
  }

  /**
   * The verdict of a non-HTTP call. With `graphqlPer: 'operation'`, a GraphQL operation's resolvers share the
   * verdict of its first (one decision per operation, not per field).
   */
  #once(type: string, context: ExecutionContext, evaluate: Evaluate): Promise<Verdict<unknown>> {
    if (type === 'rpc') return rpcView(context).then((view) => evaluate(context, view));
    if (type !== 'graphql' || this.#options.graphqlPer !== 'operation') return evaluate(context, viewOf(type, context));
    const operation = context.getArgByIndex<object | undefined>(2);
    if (typeof operation !== 'object' || operation === null) return evaluate(context, viewOf(type, context));
    let decided = this.#operations.get(evaluate)?.get(operation);
    if (decided === undefined) {
      decided = evaluate(context, viewOf(type, context));
      let byOperation = this.#operations.get(evaluate);
      if (byOperation === undefined) {
        byOperation = new WeakMap();
        this.#operations.set(evaluate, byOperation);
      }
      byOperation.set(operation, decided);
    }
    return decided;
  }

  /** The evaluator of a handler's options (the module's when it has none) for calls of `type`, made on first use. */
  #evaluatorFor(route: RouteLimitOptions | undefined, prefix: string, type: string): Evaluate | undefined {
    const options = route ?? this.#options;
    if (!limits(options)) return undefined;
    let entry = this.#evaluators.get(options);
    if (entry === undefined) {
      const { store } = this.#options;
      const owned =
        options.limiter === undefined && options.algorithm !== undefined
          ? createLimiter({
              rules: options.algorithm as never,
              prefix: route === undefined ? 'sluice-nestjs' : prefix,
              ...(store === undefined ? {} : { store }),
            })
          : undefined;
      entry = { owned, byType: new Map(), limitedError: options.limitedError ?? this.#options.limitedError };
      this.#evaluators.set(options, entry);
    }
    let evaluate = entry.byType.get(type);
    if (evaluate === undefined) {
      const {
        store: _store,
        limiter: _moduleLimiter,
        algorithm: _moduleRules,
        contexts: _contexts,
        graphqlPer: _per,
        limitedError: _limitedError,
        ...defaults
      } = this.#options;
      const { limitedError: _routeLimitedError, ...own } = options;
      const limiter = options.limiter ?? entry.owned;
      const key = options.key ?? defaults.key ?? (type === 'ws' ? wsDefaultKey : undefined);
      // Checked already by @RateLimit and forRoot; the module's options stand in for a handler that has none.
      evaluate = createEvaluator<ExecutionContext>(
        {
          ...defaults,
          ...own,
          limiter,
          ...(key === undefined ? {} : { key }),
        },
        'rateLimit',
        SLUICE_MODULE_OPTIONS,
      );
      entry.byType.set(type, evaluate);
    }
    return evaluate;
  }

  /** Closes the limiters the module made (yours stay yours). */
  async onModuleDestroy(): Promise<void> {
    const owned = [...this.#evaluators.values()].flatMap((e) => (e.owned === undefined ? [] : [e.owned]));
    this.#evaluators.clear();
    await Promise.all(owned.map((limiter) => limiter.close()));
  }
}

type LimitedError = NonNullable<RouteLimitOptions['limitedError']>;

/** The contexts of the calls a SluiceGuard has decided (see canActivate). */
const decided = new WeakSet<ExecutionContext>();

/** Whether options limit anything: a limiter, rules, or a concurrency limit. */
function limits(options: RouteLimitOptions): boolean {
  return options.limiter !== undefined || options.algorithm !== undefined || options.concurrency !== undefined;
}

/** A node response (Express's): what after-response accounting listens to. */
function isNodeResponse(value: unknown): value is Parameters<typeof settleOnNodeResponse>[0] {
  return typeof (value as { once?: unknown } | undefined)?.once === 'function';
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
