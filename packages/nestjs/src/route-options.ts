import { SluiceTypeError } from '@sluice/core';
import {
  type OptionNames,
  RATE_LIMIT_OPTIONS,
  describeValue,
  functionValue,
  knownOptions,
} from '@sluice/core/internal';
import type { RouteLimitOptions, SluiceModuleAsyncOptions, SluiceModuleOptions } from './options.js';

/** The names of RouteLimitOptions: the HTTP adapters' options and a route's own. */
export const ROUTE_LIMIT_OPTIONS: OptionNames<RouteLimitOptions> = {
  ...RATE_LIMIT_OPTIONS,
  algorithm: true,
  limitedError: true,
};

/** The names of SluiceModuleOptions: a route's, and the module's own. */
export const SLUICE_MODULE_OPTIONS: OptionNames<SluiceModuleOptions> = {
  ...ROUTE_LIMIT_OPTIONS,
  store: true,
  contexts: true,
  graphqlPer: true,
};

/** The names of SluiceModuleAsyncOptions. */
export const SLUICE_MODULE_ASYNC_OPTIONS: OptionNames<SluiceModuleAsyncOptions> = {
  imports: true,
  inject: true,
  useFactory: true,
};

/**
 * The shape every route's options must have: an object of the options `known` names (a route's or the
 * module's), (for a @RateLimit) exactly one of `limiter` and `algorithm`, and a `limitedError` that is a
 * function. The rest is the shared HTTP options parser's to check.
 */
export function checkRouteOptions(
  what: string,
  options: RouteLimitOptions | undefined,
  needsLimit: boolean,
  known: Readonly<Record<string, true>> = ROUTE_LIMIT_OPTIONS,
): void {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceTypeError(what, options, `${what} must be an object, got ${describeValue(options)}`);
  }
  knownOptions(what, known, options, true);
  if (options.limitedError !== undefined) functionValue('limitedError', options.limitedError);
  const has = [options.limiter !== undefined && 'limiter', options.algorithm !== undefined && 'algorithm'].filter(
    Boolean,
  );
  if (has.length > 1)
    throw new SluiceTypeError('limiter', options.limiter, `${what}: give limiter or algorithm, not both`);
  if (needsLimit && has.length === 0 && options.concurrency === undefined) {
    throw new SluiceTypeError(
      'algorithm',
      undefined,
      `${what} need a limiter, an algorithm (rules) or a concurrency limiter, e.g. { algorithm: fixedWindow({ ` +
        `limit: 10, windowMs: 60_000 }) }`,
    );
  }
}
