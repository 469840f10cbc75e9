import { describe, expectTypeOf, it } from 'vitest';
import {
  type Algorithm,
  type Decision,
  type Limiter,
  type Store,
  ManualClock,
  RateLimiter,
  createLimiter,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from './index.js';
import type { TokenBucketState } from './algorithms/token-bucket.js';

// Type-level tests: checked by `tsc` in `npm test` (expectTypeOf is a no-op at run time).
describe('public API types', () => {
  it('factories return typed algorithms and limiters', () => {
    expectTypeOf(tokenBucket({ capacity: 1, refillPerSecond: 1 })).toEqualTypeOf<Algorithm<TokenBucketState>>();
    const limiter = createLimiter({
      rules: [fixedWindow({ limit: 1, windowMs: 1 }), tokenBucket({ capacity: 1, refillPerSecond: 1 })],
    });
    expectTypeOf(limiter).toEqualTypeOf<Limiter>();
    expectTypeOf(limiter.tryAcquire).returns.toEqualTypeOf<Promise<Decision>>();
    expectTypeOf(limiter.acquire).returns.toEqualTypeOf<Promise<number>>();
    expectTypeOf(memoryStore()).toMatchTypeOf<Store>();
    expectTypeOf(RateLimiter.create(1).tryAcquire).returns.toEqualTypeOf<boolean>();
    expectTypeOf(RateLimiter.create(1).reserve).returns.toEqualTypeOf<number>();
    expectTypeOf(new ManualClock().now).returns.toEqualTypeOf<number>();
  });

  it('rejects wrong option types at compile time', () => {
    // @ts-expect-error capacity is required
    expectTypeOf(() => tokenBucket({ refillPerSecond: 1 })).toBeFunction();
    // @ts-expect-error prefix is a string
    expectTypeOf(() => createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1 }), prefix: 1 })).toBeFunction();
    const keyed = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1 }) });
    // @ts-expect-error keys are strings
    expectTypeOf(() => keyed.tryAcquire(42)).toBeFunction();
    expectTypeOf<Decision['allowed']>().toEqualTypeOf<boolean>();
  });
});
