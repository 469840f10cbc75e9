/**
 * Divided mode's overrides: a key given rules of its own is decided exactly on the engine (not divided), its
 * controls too. (Two nodes, standalone and Cluster: test/hybrid/live-limits.test.ts.)
 */
import { type Store, createLimiter, fixedWindow } from '@sluice/core';
import { dividedStore } from '@sluice/hybrid';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const opened: Store[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

const apiRule = (limit: number) => fixedWindow({ limit, windowMs: 60_000, name: 'api' });

/** A divided node on the test Redis, its heartbeat every 100 ms. */
function node(): ReturnType<typeof dividedStore> {
  const store = dividedStore({ redis: testRedis().redis, heartbeatMs: 100, reserve: 0, assumedNodes: 2 });
  opened.push(store);
  return store;
}

describe('an override on a divided limiter', () => {
  it("a control reaches the override's state on the engine: a reset frees the key", async () => {
    const store = node();
    const limiter = createLimiter({ rules: apiRule(100), store, prefix: `divided-override-ctl-${process.pid}` });
    await limiter.override('tenant:small', apiRule(2));
    expect((await limiter.tryAcquire('tenant:small')).allowed).toBe(true);
    expect((await limiter.tryAcquire('tenant:small')).allowed).toBe(true);
    expect((await limiter.tryAcquire('tenant:small')).allowed).toBe(false);
    await limiter.reset('tenant:small');
    expect(await limiter.tryAcquire('tenant:small')).toMatchObject({ allowed: true, remaining: 1, override: true });
    await limiter.close();
  });
});
