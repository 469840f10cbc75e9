/**
 * Hostile input, generated, against every public entry point: only typed errors (or documented denials),
 * never another exception, never a permit consumed by a rejected call; and different keys or prefixes
 * never share Redis state.
 */
import {
  type Limiter,
  concurrencyLimiter,
  RateLimiter,
  SluiceError,
  SluiceRangeError,
  SluiceTypeError,
  createLimiter,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from '@sluice/core';
import { rateLimited as decorate } from '@sluice/core/decorators';
import { stateName } from '@sluice/core/internal';
import { RULE_FACTORIES } from '../../packages/core/src/algorithms/rule-spec.js';
import { rateLimit as middleware } from '@sluice/core/http';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { descriptorKey, encodeIdentity, fleetKey, ruleId } from '../../packages/redis/src/key-layout.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
const RUNS = Number(process.env.FC_RUNS ?? 60);

/** Numbers and strings that break naive validation, mixed with anything at all. */
const nasty = fc.oneof(
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    2 ** 53 + 1,
    -0,
    0,
    -1,
    0.5,
    1e308,
    -1e-308,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
  ),
  fc.constantFrom(
    '',
    '10',
    ' 1',
    '{',
    '}',
    ':',
    '*',
    '\n',
    '\0',
    '🔥',
    'x'.repeat(10_240),
    null,
    undefined,
    true,
    [],
    {},
    () => 1,
    Symbol('s'),
    10n,
  ),
  fc.double(),
  fc.integer(),
  fc.anything(),
);
/** Keys with every character a key layout could trip on. */
const key = fc.oneof(
  fc.string({
    unit: fc.constantFrom('{', '}', ':', '*', '\n', '\0', '🔥', 'a', 'b', ' ', '\\', '%'),
    minLength: 1,
    maxLength: 12,
  }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
  fc.constant('k'.repeat(10_240)),
  fc.constant(''),
  nasty,
);
const options = fc.oneof(
  nasty,
  fc.dictionary(
    fc.constantFrom(
      'permits',
      'maxWaitMs',
      'signal',
      'limit',
      'windowMs',
      'capacity',
      'refillPerSecond',
      'burst',
      'name',
      'key',
      'scope',
      'maxDebt',
      'mode',
      'leakPerSecond',
      'permitsPerSecond',
      'maxBurstSeconds',
      'warmupMs',
      'coldFactor',
      'initialPermits',
      'prefix',
      'store',
      'clock',
      'rules',
      'failMode',
      'timeoutMs',
      'maxBatch',
      'maxLease',
      'maxKeys',
      'nodeId',
      'assumedNodes',
      'liveMs',
      'leaseMs',
      'maxQueue',
      'denyCache',
      'headers',
      'permitsAfterResponse',
      'onMissingKey',
      'heartbeatMs',
      'share',
      'targetMs',
      'lowWater',
    ),
    nasty,
  ),
);

/** Calls `f`; passes if it returns or throws a typed sluice error; returns whether it threw. */
function onlyTypedErrors(f: () => unknown): boolean {
  try {
    f();
    return false;
  } catch (error) {
    if (error instanceof SluiceTypeError || error instanceof SluiceRangeError || error instanceof SluiceError)
      return true;
    throw error;
  }
}

async function onlyTypedRejections(f: () => Promise<unknown>): Promise<boolean> {
  try {
    await f();
    return false;
  } catch (error) {
    if (error instanceof SluiceTypeError || error instanceof SluiceRangeError || error instanceof SluiceError)
      return true;
    throw error;
  }
}

// Every factory is fed anything here: typed as taking unknown.
const FACTORIES = RULE_FACTORIES as unknown as Record<string, (o: unknown) => unknown>;

describe('hostile input', () => {
  it('algorithm factories and createLimiter: typed errors only', () => {
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(FACTORIES)), options, options, (name, o, limiterOptions) => {
        onlyTypedErrors(() => (FACTORIES[name] as (o: unknown) => unknown)(o));
        onlyTypedErrors(() => createLimiter(limiterOptions as never));
        onlyTypedErrors(() => createLimiter({ rules: o as never }));
      }),
      { numRuns: RUNS * 5 },
    );
  });

  it('tryAcquire / acquire / peek / reset on memory and on Redis: typed errors only, and a rejected call consumes nothing', async () => {
    const limiters: Limiter[] = [
      createLimiter({ rules: tokenBucket({ capacity: 5, refillPerSecond: 0.001 }) }),
      createLimiter({
        rules: fixedWindow({ limit: 5, windowMs: 3_600_000 }),
        store: redisStore({ redis: redis().redis }),
        prefix: `hostile${Date.now()}`,
      }),
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(0, 1), key, options, async (which, k, o) => {
        const limiter = limiters[which] as Limiter;
        const probe = typeof k === 'string' && k.length > 0 && k.length <= 512 ? k : 'probe';
        const before = (await limiter.peek(probe)).remaining;
        const threw = await onlyTypedRejections(() => limiter.tryAcquire(k as string, o as never));
        if (threw) expect((await limiter.peek(probe)).remaining).toBe(before);
        await onlyTypedRejections(() => limiter.peek(k as string));
        await onlyTypedRejections(() => limiter.reset(k as string));
        // acquire with bad input rejects at once; with good input on a spent key it would wait, so only bad input here.
        if (
          !(
            typeof o === 'object' &&
            o !== null &&
            'permits' in o &&
            typeof o.permits === 'number' &&
            Number.isSafeInteger(o.permits) &&
            o.permits >= 1
          )
        ) {
          const before2 = (await limiter.peek(probe)).remaining;
          const threw2 = await onlyTypedRejections(() =>
            limiter.acquire(
              k as string,
              { ...(typeof o === 'object' && o !== null ? o : {}), permits: o as number } as never,
            ),
          );
          if (threw2) expect((await limiter.peek(probe)).remaining).toBe(before2);
        }
      }),
      { numRuns: RUNS * 3 },
    );
    await Promise.all(limiters.map((l) => l.close()));
  });

  it('stores, hybrid limiters, middleware, decorators and the Guava facade: typed errors only', async () => {
    const { redis: client } = redis();
    const made: { close(): Promise<void> }[] = [];
    fc.assert(
      fc.property(options, nasty, nasty, (o, a, b) => {
        const withRequired = (extra: object) => (typeof o === 'object' && o !== null ? { ...o, ...extra } : o);
        onlyTypedErrors(() => made.push(redisStore(withRequired({ redis: client }) as never)));
        onlyTypedErrors(() => made.push(memoryStore(o as never)));
        onlyTypedErrors(() => made.push(leasedStore(withRequired({ redis: client }) as never)));
        onlyTypedErrors(() => made.push(dividedStore(withRequired({ redis: client }) as never)));
        onlyTypedErrors(() => made.push(concurrencyLimiter(withRequired({ max: 2 }) as never)));
        onlyTypedErrors(() =>
          middleware(
            withRequired({
              limiter: createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }) }),
            }) as never,
          ),
        );
        onlyTypedErrors(() =>
          decorate(
            withRequired({
              limiter: createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }) }),
            }) as never,
          ),
        );
        onlyTypedErrors(() => {
          const facade = RateLimiter.create(a as number, b as never);
          onlyTypedErrors(() => facade.tryAcquire(a as number));
          onlyTypedErrors(() => facade.reserve(b as number));
          onlyTypedErrors(() => facade.setRate(b as number));
        });
      }),
      { numRuns: RUNS * 3 },
    );
    await Promise.all(made.map((m) => m.close()));
  });

  it('different keys, and different prefixes, never share Redis state (checked on the key names)', async () => {
    const { redis: client } = redis();
    const run = `iso${Date.now()}`;
    const store = redisStore({ redis: client });
    const a = createLimiter({ rules: fixedWindow({ limit: 3, windowMs: 3_600_000 }), store, prefix: `${run}.a` });
    const b = createLimiter({ rules: fixedWindow({ limit: 3, windowMs: 3_600_000 }), store, prefix: `${run}.b` });
    const validKey = fc.string({
      unit: fc.constantFrom('{', '}', ':', '*', '\n', '\0', '🔥', 'a', ' '),
      minLength: 1,
      maxLength: 10,
    });
    const keys = fc.sample(fc.uniqueArray(validKey, { minLength: 50, maxLength: 50 }), {
      numRuns: 1,
      seed: 7,
    })[0] as string[];
    for (const k of keys) {
      expect((await a.tryAcquire(k)).remaining).toBe(2);
      expect((await b.tryAcquire(k, { permits: 2 })).remaining).toBe(1);
    }
    const all = await client.keys(`${run}.*`);
    // Each limiter's fleet (its fail mode's share) is counted under its own prefix, once, beside its descriptor.
    const fleets = [`${run}.a`, `${run}.b`].flatMap((p) => [fleetKey(p), descriptorKey(p)]).sort();
    expect(all.filter((name) => fleets.includes(name)).sort()).toEqual(fleets);
    const names = all.filter((name) => !fleets.includes(name));
    // One state per (prefix, key): nothing shared, nothing lost.
    expect(names).toHaveLength(2 * keys.length);
    for (const k of keys) {
      for (const p of [`${run}.a`, `${run}.b`]) {
        const state = `${p}{${encodeIdentity(k)}}${ruleId(stateName(fixedWindow({ limit: 3, windowMs: 3_600_000 })))}`;
        expect(names).toContain(state);
      }
    }
    await store.close();
  });
});
