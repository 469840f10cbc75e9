/**
 * A flood of distinct keys through exact mode: Redis keeps only what the TTLs allow (keys expire on their
 * own), and the node's heap stays bounded (nothing on the node grows per key).
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { spawnRedisServer } from '../harness/redis-server.js';
import { heapAfterGc } from './gc.js';

// Long enough (about 10 s here) that the keys alive at any moment, a few seconds' worth, are a small part of
// the flood however fast the machine decides.
const KEYS = Number(process.env.FLOOD_KEYS ?? 2_000_000);
const IN_FLIGHT = 256;
const MB = 1024 * 1024;

async function usedMemory(client: Redis): Promise<number> {
  return Number((await client.info('memory')).match(/used_memory:(\d+)/)?.[1]);
}

describe('key flood', () => {
  it(`${KEYS.toLocaleString('en')} distinct keys: Redis memory bounded by the TTLs, node heap bounded`, async () => {
    const server = await spawnRedisServer();
    const client = new Redis(server.url);
    const admin = new Redis(server.url);
    try {
      const store = redisStore({ redis: client });
      // 1 s windows: each key's state lives at most ~2 s (its window and a second of margin).
      const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }), store, prefix: 'flood' });
      const baselineMemory = await usedMemory(admin);
      const heapBefore = heapAfterGc();
      let next = 0;
      let peakKeys = 0;
      const sampler = setInterval(() => {
        void admin.dbsize().then((n) => (peakKeys = Math.max(peakKeys, n)));
      }, 250);
      const started = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          for (let i = next++; i < KEYS; i = next++) await limiter.tryAcquire(`attacker-${i}`);
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      const heapAfter = heapAfterGc();
      // Every key written expires: wait for Redis to reclaim them (active expiry), bounded.
      let keysLeft = await admin.dbsize();
      const deadline = performance.now() + 20_000;
      while (keysLeft > KEYS / 100 && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        keysLeft = await admin.dbsize();
      }
      const memoryAfter = await usedMemory(admin);
      const perSecond = KEYS / seconds;
      console.table([
        {
          keys: KEYS,
          'decisions/s': Math.round(perSecond),
          'peak keys in Redis': peakKeys,
          'TTL bound (rate x 2 s)': Math.round(perSecond * 2),
          'keys left after expiry': keysLeft,
          'Redis memory growth after (MB)': Number(((memoryAfter - baselineMemory) / MB).toFixed(1)),
          'node heap growth after GC (MB)': Number(((heapAfter - heapBefore) / MB).toFixed(1)),
        },
      ]);
      // Never the whole flood: what the TTLs allow, plus what Redis's active expiry has not reclaimed yet
      // (measured here: about 1.5 x the TTL bound at the peak, some 550k keys at 175k decisions/s).
      expect(peakKeys).toBeLessThan(Math.min(0.6 * KEYS, 3 * perSecond * 2));
      expect(keysLeft).toBeLessThanOrEqual(KEYS / 100);
      expect(memoryAfter - baselineMemory).toBeLessThan(32 * MB);
      expect(heapAfter - heapBefore).toBeLessThan(32 * MB);
      await limiter.close();
      await store.close();
    } finally {
      client.disconnect();
      admin.disconnect();
      await server.stop();
    }
  });
});
