/**
 * A refund on Redis is announced to every node (PUBLISH on the limiter's channel) only when it can turn a denial
 * some node holds into a grant: when the key was denying one permit before it (a deny cache keeps single-permit
 * denials only; a lease remembers a central state it found spent). Every refund once published: 500 refunds of
 * keys far from their limit were 500 PUBLISHes, one per request with skipSuccessfulRequests, broadcast over a
 * Cluster's bus. Counted with INFO commandstats on a throwaway server, in exact and leased mode; the cached
 * denials a refund must still reach are test/redis/cached-denials.test.ts's.
 */
import { type Limiter, createLimiter, tokenBucket } from '@sluice/core';
import { leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let admin: Redis;
beforeAll(() => {
  admin = new Redis(testRedis().server.url);
});
afterAll(() => admin.disconnect());

/** PUBLISH calls the server ran since `resetStats`, once the store's client has sent what it queued. */
async function publishes(): Promise<number> {
  // The announcement is not awaited by the refund, but written before it resolves: a later reply on the same
  // connection means the server has run it.
  await testRedis().redis.ping();
  const stats = await admin.info('commandstats');
  return Number(/cmdstat_publish:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}
const resetStats = () => admin.config('RESETSTAT');

const modes = {
  exact: () => redisStore({ redis: testRedis().redis }),
  leased: () => leasedStore({ redis: testRedis().redis }),
};
let n = 0;

describe.each(Object.keys(modes) as (keyof typeof modes)[])('%s mode', (mode) => {
  async function limiterOf(capacity: number): Promise<{ limiter: Limiter; close: () => Promise<void> }> {
    const store = modes[mode]();
    const limiter = createLimiter({
      prefix: `refund-announce-${process.pid}-${n++}`,
      rules: tokenBucket({ name: 'api', capacity, refillPerSecond: 1 / 3_600 }),
      store,
    });
    await limiter.ready();
    return {
      limiter,
      close: async () => {
        await limiter.close();
        await store.close();
      },
    };
  }

  it('500 refunds of keys that still grant: no PUBLISH', async () => {
    const { limiter, close } = await limiterOf(1_000_000);
    try {
      await resetStats();
      for (let i = 0; i < 500; i++) {
        const key = `u${i % 50}`;
        const decision = await limiter.tryAcquire(key);
        await limiter.refund(key, 1, { decision });
      }
      expect(await publishes()).toBe(0);
    } finally {
      await close();
    }
  });

  it('a refund of a key denying one permit: one PUBLISH; of a key one short of it (it grants): none', async () => {
    const { limiter, close } = await limiterOf(5);
    try {
      const grants = await Promise.all(Array.from({ length: 4 }, () => limiter.tryAcquire('k')));
      expect(grants.every((d) => d.allowed)).toBe(true);
      await resetStats();
      // One left: the key grants, no node can hold a denial of it.
      await limiter.refund('k', 1, { decision: grants[0] });
      expect(await publishes()).toBe(0);
      const last = [await limiter.tryAcquire('k'), await limiter.tryAcquire('k'), await limiter.tryAcquire('k')];
      expect(last.map((d) => d.allowed)).toEqual([true, true, false]);
      await resetStats();
      await limiter.refund('k', 1, { decision: last[1] });
      expect(await publishes()).toBe(1);
      expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    } finally {
      await close();
    }
  });
});
