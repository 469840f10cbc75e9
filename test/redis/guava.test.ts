import {
  type Algorithm,
  type Store,
  ManualClock,
  createLimiter,
  memoryStore,
  smoothBursty,
  smoothWarmingUp,
} from '@sluice/core';
import { redisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let server: TestRedis;
let redis: Redis;
beforeAll(() => void ({ server, redis } = testRedis()));
let n = 0;

/**
 * Guava's RateLimiterTest scenarios through createLimiter, on Redis and on memory: a ManualClock that
 * advances when slept on plays Guava's fake stopwatch, "R" is a limiter wait, "U" a test sleep.
 * A keyed limiter is created by its first request (Guava's at construction), which only matters for the
 * idle-then-burst scenario: there the key starts with the burst Guava would have stored.
 */
for (const backend of ['redis', 'memory'] as const) {
  describe(`Guava scenarios on ${backend}`, () => {
    async function timeline(algorithm: Algorithm) {
      const clock = new ManualClock(1_000_000, { autoAdvance: true });
      const stores: Store[] = [];
      const store = backend === 'redis' ? redisStore({ redis, clock }) : memoryStore({ clock });
      stores.push(store);
      const limiter = createLimiter({ rules: algorithm, store, prefix: `guava${++n}` });
      const events: string[] = [];
      return {
        clock,
        async acquire(permits = 1) {
          events.push(`R${((await limiter.acquire('k', { permits })) / 1000).toFixed(2)}`);
        },
        async tryWithin(maxWaitMs: number, permits = 1) {
          return (await limiter.tryAcquire('k', { permits, maxWaitMs })).allowed;
        },
        sleep(ms: number) {
          events.push(`U${(ms / 1000).toFixed(2)}`);
          clock.advance(ms);
        },
        take: () => events.splice(0).join(', '),
        close: () => Promise.all(stores.map((s) => s.close())),
      };
    }
    const repeat = async (count: number, f: () => Promise<void>) => {
      for (let i = 0; i < count; i++) await f();
    };

    it('simple 5 qps; wait then acquire; weights 1,1,2,4,8,1 at 1 qps', async () => {
      const a = await timeline(smoothBursty({ permitsPerSecond: 5 }));
      await repeat(3, () => a.acquire());
      expect(a.take()).toBe('R0.00, R0.20, R0.20');
      a.sleep(200);
      await a.acquire();
      await a.acquire();
      expect(a.take()).toBe('U0.20, R0.00, R0.20');
      await a.close();
      const w = await timeline(smoothBursty({ permitsPerSecond: 1 }));
      for (const permits of [1, 1, 2, 4, 8, 1]) await w.acquire(permits);
      expect(w.take()).toBe('R0.00, R1.00, R1.00, R2.00, R4.00, R8.00');
      await w.close();
    });

    it('one-second burst after a long idle', async () => {
      const a = await timeline(smoothBursty({ permitsPerSecond: 5, initialPermits: 5 }));
      a.sleep(1000);
      a.sleep(1000);
      for (const permits of [1, 1, 3, 1, 1]) await a.acquire(permits);
      expect(a.take()).toBe('U1.00, U1.00, R0.00, R0.00, R0.00, R0.00, R0.20');
      await a.close();
    });

    it('tryAcquire with no wait, some wait, and an overflowing timeout', async () => {
      const a = await timeline(smoothBursty({ permitsPerSecond: 5 }));
      expect(await a.tryWithin(0)).toBe(true);
      expect(await a.tryWithin(0)).toBe(false);
      a.clock.advance(100);
      expect(await a.tryWithin(0)).toBe(false);
      expect(await a.tryWithin(100)).toBe(true); // waits the remaining 100 ms
      expect(await a.tryWithin(100)).toBe(false);
      a.clock.advance(100);
      expect(await a.tryWithin(100)).toBe(true);
      expect(await a.tryWithin(Number.MAX_VALUE)).toBe(true);
      await a.close();
    });

    it('the warm-up curve, cold again, staying warm (2 qps, 4 s, cold factor 3)', async () => {
      const a = await timeline(smoothWarmingUp({ permitsPerSecond: 2, warmupMs: 4000, coldFactor: 3 }));
      const curve = 'R0.00, R1.38, R1.13, R0.88, R0.63, R0.50, R0.50, R0.50';
      await repeat(8, () => a.acquire());
      a.sleep(500);
      a.sleep(4000);
      await repeat(8, () => a.acquire());
      a.sleep(500);
      a.sleep(2000);
      await repeat(8, () => a.acquire());
      expect(a.take()).toBe(
        `${curve}, U0.50, U4.00, ${curve}, U0.50, U2.00, R0.00, R0.50, R0.50, R0.50, R0.50, R0.50, R0.50, R0.50`,
      );
      await a.close();
    });

    it('cold factor 10 and cold factor 1', async () => {
      const ten = await timeline(smoothWarmingUp({ permitsPerSecond: 5, warmupMs: 4000, coldFactor: 10 }));
      await repeat(8, () => ten.acquire());
      expect(ten.take()).toBe('R0.00, R1.75, R1.26, R0.76, R0.30, R0.20, R0.20, R0.20');
      await ten.close();
      const one = await timeline(smoothWarmingUp({ permitsPerSecond: 5, warmupMs: 4000, coldFactor: 1 }));
      await repeat(8, () => one.acquire());
      expect(one.take()).toBe('R0.00, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20');
      await one.close();
    });
  });
}
