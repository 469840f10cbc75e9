import type { Decision } from '../../foundation/decision.js';
import { RateLimitedError, SluiceTypeError, inCall } from '../../foundation/errors.js';
import type { Limiter } from '../../engine/limiter-types.js';
import { requireRequestContext } from '../http/context.js';
import { type RequestKeyMark, byIp, byIpSettings, clientAddressReader, isRequestStrategy } from '../http/keys.js';
import type { RequestView } from '../http/view.js';
import { type OptionNames, knownOptions } from '../../foundation/options.js';
import { describe, nonNegativeOrInfinite, positiveInteger } from '../../foundation/validate.js';

/** One call of a decorated method, as key and permits functions see it. */
export interface MethodCall {
  /** The instance (or, for a static method, the class). */
  readonly self: unknown;
  readonly args: readonly unknown[];
  /** `ClassName.methodName`. */
  readonly method: string;
}

/** Options of the method decorator: the limiter, the key of a call, its permits and how long a call may wait. */
export interface MethodLimitOptions {
  /** The limiter that decides (any mode). */
  limiter: Limiter;
  /**
   * The key a call counts against: a fixed string, a function of the call (`({ args }) => String(args[0])`
   * for one bucket per phone number, say), or a strategy of the current request: `byIp()` or
   * `byUser((req) => req.user?.id)` from `@sluice/core/http` (the starter's limitType IP and USER). A request
   * strategy reads the request a sluice HTTP adapter (or `requestContext()`) is handling; called outside
   * one, the method throws SluiceError('NO_REQUEST') saying so. A request without a user is keyed by its
   * address, as the HTTP adapters do by default.
   * @default the method's name, `ClassName.methodName`: one bucket for every call of the method
   */
  key?: string | ((call: MethodCall) => string) | RequestKeyMark;
  /**
   * Permits a call asks for.
   * @default 1
   */
  permits?: number | ((call: MethodCall) => number);
  /**
   * How long a call may wait for its permits before it throws RateLimitedError.
   * @default 0
   */
  maxWaitMs?: number;
}

/** The names of MethodLimitOptions, which the presets' lists spread. */
export const METHOD_LIMIT_OPTIONS: OptionNames<MethodLimitOptions> = {
  limiter: true,
  key: true,
  permits: true,
  maxWaitMs: true,
};

/** An async method, as the decorator takes and returns it. */
export type AsyncMethod<This, Args extends unknown[], R> = (this: This, ...args: Args) => Promise<R>;

/**
 * A method decorator that rate-limits an async method, in both decorator dialects: TypeScript 5 standard
 * decorators, and legacy ones (`experimentalDecorators`, as NestJS apps compile), so one sluice decorator
 * works in any project.
 */
export interface MethodLimitDecorator {
  /** As a TypeScript 5 standard decorator. */
  <This, Args extends unknown[], R>(
    target: AsyncMethod<This, Args, R>,
    context: ClassMethodDecoratorContext<This, AsyncMethod<This, Args, R>>,
  ): AsyncMethod<This, Args, R>;
  /**
   * As a legacy (`experimentalDecorators`) decorator.
   * @typeParam T the decorated method
   */
  <T extends (...args: never[]) => Promise<unknown>>(
    target: object,
    propertyKey: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ): TypedPropertyDescriptor<T>;
}

const addressKey = byIp();

/**
 * A call's key from the current request (what the HTTP adapter admitted): the strategy's, else the
 * address's; and the client's address for the access lists, read with the strategy's proxy settings when
 * it is a byIp, else the peer's.
 */
function requestKey(
  strategy: (req: unknown, view: RequestView) => string | undefined | null,
  method: string,
): { key: string; address: string | undefined } {
  const { request, view } = requireRequestContext(`@rateLimited on ${method}`);
  const key = strategy(request, view) || addressKey(request, view);
  if (typeof key === 'string' && key !== '') return { key, address: clientAddressReader(byIpSettings(strategy))(view) };
  throw new SluiceTypeError(
    'key',
    key,
    `@rateLimited on ${method}: the current request has no key for it and no readable client address`,
  );
}

function className(self: unknown, isStatic: boolean): string {
  if (isStatic) return typeof self === 'function' ? self.name : 'anonymous';
  const ctor = (self as { constructor?: { name?: unknown } } | null | undefined)?.constructor;
  return typeof ctor?.name === 'string' && ctor.name !== '' ? ctor.name : 'anonymous';
}

/**
 * Rate-limits an async class method (TypeScript 5 standard decorators). A call that is allowed runs the
 * method with its `this` and arguments and returns its result; a call that is denied, after waiting up to
 * `maxWaitMs`, throws RateLimitedError carrying the Decision and never runs the method.
 *
 * @example
 * class Codes {
 *   @rateLimited({ limiter, key: ({ args }) => `phone:${String(args[0])}` })
 *   async send(phone: string) { ... }
 * }
 */
export function rateLimited(options: MethodLimitOptions): MethodLimitDecorator {
  return inCall('rateLimited', () => {
    knownOptions('rateLimited options', METHOD_LIMIT_OPTIONS, options, true);
    const { limiter, key, permits } = options;
    if (
      typeof limiter !== 'object' ||
      limiter === null ||
      typeof (limiter as Partial<Limiter>).tryAcquire !== 'function'
    ) {
      throw new SluiceTypeError(
        'limiter',
        limiter,
        `limiter must be a sluice Limiter (createLimiter(...)), got ${describe(limiter)}`,
      );
    }
    if (key !== undefined && typeof key !== 'string' && typeof key !== 'function') {
      throw new SluiceTypeError('key', key, `key must be a string or a function of the call, got ${describe(key)}`);
    }
    if (permits !== undefined && typeof permits !== 'function') positiveInteger('permits', permits);
    const maxWaitMs = options.maxWaitMs === undefined ? 0 : nonNegativeOrInfinite('maxWaitMs', options.maxWaitMs);

    /** The limited version of `target`, a method named `methodName` (of a class, when `isStatic`). */
    const limit = <This, Args extends unknown[], R>(
      target: AsyncMethod<This, Args, R>,
      methodName: string,
      isStatic: boolean,
    ): AsyncMethod<This, Args, R> =>
      async function limited(this: This, ...args: Args): Promise<R> {
        const call: MethodCall = { self: this, args, method: `${className(this, isStatic)}.${methodName}` };
        const { key: callKey, address } = isRequestStrategy(key)
          ? requestKey(key, call.method)
          : {
              key: typeof key === 'function' ? (key as (c: MethodCall) => string)(call) : (key ?? call.method),
              address: undefined,
            };
        const callPermits = typeof permits === 'function' ? permits(call) : (permits ?? 1);
        const decision: Decision = await limiter.tryAcquire(callKey, {
          permits: callPermits,
          maxWaitMs,
          ...(address === undefined ? {} : { address }),
        });
        if (!decision.allowed) throw new RateLimitedError(decision);
        return target.apply(this, args);
      };

    function decorate(target: unknown, context: unknown, descriptor?: PropertyDescriptor): unknown {
      // Legacy (experimentalDecorators): (prototype or class, name, descriptor) -> descriptor.
      if (descriptor !== undefined && (typeof context === 'string' || typeof context === 'symbol')) {
        if (typeof descriptor.value !== 'function')
          throw new SluiceTypeError(
            'context',
            typeof descriptor.value,
            '@rateLimited decorates methods, not accessors or fields',
          );
        return {
          ...descriptor,
          value: limit(
            descriptor.value as AsyncMethod<unknown, unknown[], unknown>,
            String(context),
            typeof target === 'function',
          ),
        };
      }
      const standard = context as ClassMethodDecoratorContext;
      if (standard?.kind !== 'method') {
        throw new SluiceTypeError(
          'context',
          standard?.kind,
          `@rateLimited decorates methods, not a ${String(standard?.kind)}`,
        );
      }
      return limit(target as AsyncMethod<unknown, unknown[], unknown>, String(standard.name), standard.static);
    }
    return decorate as MethodLimitDecorator;
  });
}
