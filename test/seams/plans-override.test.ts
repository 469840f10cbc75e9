/**
 * Plans x overrides, the same calls on every store: `createLimiter({ plans })`, `limiter.override(key, rules)`,
 * then `tryAcquire(key, { plan })`. A limiter with plans keeps no configuration for every node, where a
 * shared store keeps overrides, so an override on it is refused on every store alike, with that reason,
 * before anything is bound or moved; leased and divided mode refuse the plans themselves at creation (they
 * enforce one set of rules per limiter). Before (c132e5b) the memory store took the override and redisStore
 * refused it saying it "cannot carry a key's states between rules", which it can.
 */
import { type Limiter, type Store, createLimiter, memoryStore, tokenBucket } from '@sluice/core';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { livePrefix } from '../harness/live-nodes.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();

/** A bucket that refills one token in 1,000 s: counts stay whole for the test. */
const bucket = (capacity: number) => tokenBucket({ name: 'api', capacity, refillPerSecond: 0.001 });
const plans = { free: bucket(5), pro: bucket(50) };

/** Each store, made on a client of its own (closed after the test with the store). */
const STORES: ReadonlyArray<{ name: string; make: (redis: Redis) => Store; plans: 'held' | 'refused' }> = [
  { name: 'memoryStore', make: () => memoryStore(), plans: 'held' },
  { name: 'redisStore', make: (redis) => redisStore({ redis }), plans: 'held' },
  { name: 'leasedStore', make: (redis) => leasedStore({ redis }), plans: 'refused' },
  { name: 'dividedStore', make: (redis) => dividedStore({ redis }), plans: 'refused' },
];

describe.each(STORES)('$name', ({ name, make, plans: held }) => {
  it('a limiter with plans: an override is refused with the true reason, and the key keeps its plan, nothing used', async () => {
    const redis = new Redis(testRedis().server.url);
    const store = make(redis);
    let limiter: Limiter | undefined;
    try {
      const create = () => createLimiter({ plans, store, prefix: livePrefix() });
      if (held === 'refused') {
        expect(create).toThrow(
          expect.objectContaining({
            code: 'INVALID_ARGUMENT',
            message: expect.stringContaining(`${name} cannot honour plans`),
          }),
        );
        return;
      }
      limiter = create();
      await limiter.ready();
      expect(await limiter.tryAcquire('acme', { plan: 'free' })).toMatchObject({ allowed: true, remaining: 4 });
      const refusal = limiter.override('acme', bucket(100));
      await expect(refusal).rejects.toMatchObject({
        code: 'UNSUPPORTED',
        message: expect.stringMatching(/^override: a limiter with plans takes no overrides/),
      });
      // Nothing moved or bound: the key is decided by its plan, with what it used.
      expect(await limiter.tryAcquire('acme', { plan: 'free' })).toMatchObject({
        allowed: true,
        remaining: 3,
        plan: 'free',
      });
      expect((await limiter.tryAcquire('acme', { plan: 'free' })).override).toBeUndefined();
      expect((await limiter.overrides()).overrides).toEqual([]);
      // Removing what is not there does nothing, as on a limiter without plans.
      await limiter.removeOverride('acme');
    } finally {
      await limiter?.close();
      await (store as { close?: () => Promise<void> }).close?.();
      redis.disconnect();
    }
  });
});
