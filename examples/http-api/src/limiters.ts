/**
 * The demo controller's limits, as one would write them in a service. Every limiter shares one store:
 * memory in a single process, Redis for a fleet (pass redisStore(...)).
 */
import {
  type Clock,
  type Limiter,
  type Rules,
  type Store,
  createLimiter,
  fixedWindow,
  smoothBursty,
} from '@sluice/core';

export interface DemoLimiters {
  /** `GET /limiter/count`: 2 requests per 10 s per `key` (a count limit, fixed window). */
  readonly count: Limiter;
  /** `GET /limiter/rate`: 1 request per 5 s with 5 s of burst, for the endpoint as a whole (SmoothBursty). */
  readonly rate: Limiter;
  /** `GET /limiter/rate2`: 1 per 30 s, used directly from the handler's code. */
  readonly rate2: Limiter;
  /** `/api/*`: per user 200 / 10 s, 5,000 / h and 20,000 / day, plus 1,000 / s for all users together. */
  readonly api: Limiter;
  close(): Promise<void>;
}

export function demoLimiters(store: Store, clock?: Clock): DemoLimiters {
  const make = (prefix: string, algorithm: Rules) =>
    createLimiter({ rules: algorithm, store, prefix, ...(clock === undefined ? {} : { clock }) });
  const limiters = {
    count: make('demo.count', fixedWindow({ limit: 2, windowMs: 10_000, name: 'count' })),
    rate: make('demo.rate', smoothBursty({ permitsPerSecond: 1 / 5, maxBurstSeconds: 5, name: 'rate' })),
    rate2: make('demo.rate2', smoothBursty({ permitsPerSecond: 1 / 30, name: 'rate2' })),
    api: make('demo.api', [
      fixedWindow({ limit: 200, windowMs: 10_000, name: 'per-10s' }),
      fixedWindow({ limit: 5_000, windowMs: 3_600_000, name: 'per-hour' }),
      fixedWindow({ limit: 20_000, windowMs: 86_400_000, name: 'per-day' }),
      // `scope: 'all'`: every user counts against this one rule.
      fixedWindow({ limit: 1_000, windowMs: 1_000, name: 'global', scope: 'all' }),
    ]),
  };
  return {
    ...limiters,
    async close() {
      await Promise.all(Object.values(limiters).map((l) => l.close()));
    },
  };
}
