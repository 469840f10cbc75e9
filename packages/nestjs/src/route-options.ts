import { SluiceTypeError } from '@sluice/core';
import { onLimitedOption } from '@sluice/core/http';
import { describeValue } from '@sluice/core/store-kit';
import type { RouteLimitOptions } from './options.js';

/**
 * The shape every route's options must have: an object, and (for a @RateLimit) exactly one of `limiter` and
 * `algorithm`, and an `onLimited` that is a function. The rest is the shared HTTP options parser's to check.
 */
export function checkRouteOptions(what: string, options: RouteLimitOptions | undefined, needsLimit: boolean): void {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceTypeError(what, options, `${what} must be an object, got ${describeValue(options)}`);
  }
  onLimitedOption(options.onLimited);
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
