/**
 * limiter.reconfigure that changes a rule's scope under the same name: a rule counted against one identity for
 * every key (`scope: 'global'`) becomes a per-key rule. Since ac7e6deb the engine's carry reads an earlier
 * generation's state under the EARLIER rule's identity (identityOf(from.rule, key)): the first key touched
 * after the change takes the whole fleet's global usage as its own, and deletes the global state, so every
 * other key starts fresh. Before, the carry looked under the rule in force's identity and carried nothing
 * across a scope change. One key is denied for the rest of the window for what all keys used. memoryStore's
 * CarriedBinding did the same before (by rule name, whatever the identity).
 */
import { type Store, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
const HOUR_MS = 3_600_000;

it.each([
  ['redisStore', () => redisStore({ redis: redis().redis, timeoutMs: 5_000, denyCache: false })],
  ['memoryStore', () => memoryStore()],
] as const)("%s: a global rule made per-key: no key takes the fleet's usage as its own", async (_name, storeOf) => {
  const store: Store = storeOf();
  const limiter = createLimiter({
    rules: fixedWindow({ name: 'a', limit: 100, windowMs: HOUR_MS, scope: 'global' }),
    store,
    prefix: `scope-carry-${Date.now()}`,
  });
  try {
    await limiter.ready();
    // 30 keys use 2 each: 60 of the global 100.
    for (let i = 0; i < 30; i++) expect((await limiter.tryAcquire(`user:${i}`, { permits: 2 })).allowed).toBe(true);
    await limiter.reconfigure(fixedWindow({ name: 'a', limit: 10, windowMs: HOUR_MS }), { carry: 'used' });
    const first = await limiter.tryAcquire('user:0');
    const second = await limiter.tryAcquire('user:1');
    // Each key's own count is what matters now: the same for two keys that used the same.
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    expect(first.remaining).toBe(second.remaining);
  } finally {
    await limiter.close();
    await store.close?.();
  }
});
