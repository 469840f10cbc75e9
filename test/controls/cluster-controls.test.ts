/**
 * The controls on a real 3-master Cluster: bans live beside a key's states (its own slot), a policy whose
 * rules all live in other slots checks the key's ban in a call of its own, refunds touch the key's own slot
 * only and penalties every slot the key's rules live in; hostile keys (braces, empty tags) among them.
 */
import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { type DecisionEvent, redisStore } from '@sluice/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestCluster } from '../harness/use-redis.js';

const cluster = useTestCluster();
let n = 0;
const prefix = () => `cc${++n}`;
const stores: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

function clusterStore(sources?: DecisionEvent['source'][]) {
  // A deadline no busy machine misses: a fail-mode answer would hide what this suite checks.
  const store = redisStore({
    redis: cluster().client,
    timeoutMs: 10_000,
    failMode: 'closed',
    ...(sources ? { onDecision: (e) => sources.push(e.source) } : {}),
  });
  stores.push(store);
  return store;
}

const KEYS = ['}', '{', '{}', '}{', 'a{b}c', '%7B', 'user:1', 'user:2', 'user:3', 'tenant-x'];

describe('controls on a Cluster', () => {
  it('blockMs bans and explicit blocks hold per key, hostile keys included; unblock lifts them on every slot', async () => {
    const sources: DecisionEvent['source'][] = [];
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 600_000, blockMs: 600_000 }),
      store: clusterStore(sources),
      prefix: prefix(),
    });
    for (const key of KEYS) {
      expect((await limiter.tryAcquire(key)).allowed).toBe(true);
      expect((await limiter.tryAcquire(key)).allowed).toBe(true);
      expect(await limiter.tryAcquire(key), key).toMatchObject({ allowed: false, blocked: true });
    }
    await limiter.block('clean', 60_000);
    expect(await limiter.tryAcquire('clean')).toMatchObject({ allowed: false, blocked: true });
    for (const key of [...KEYS, 'clean']) await limiter.unblock(key);
    expect((await limiter.tryAcquire('clean')).allowed).toBe(true);
    // Unblocked, the rule itself still has nothing left for the first keys.
    expect(await limiter.tryAcquire('}')).toMatchObject({ allowed: false });
    expect(sources.filter((s) => s === 'fallback')).toEqual([]);
  });

  it('a policy whose every rule lives in another slot still honours the key ban (a ban-only call in its slot)', async () => {
    const sources: DecisionEvent['source'][] = [];
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 1_000, windowMs: 600_000, name: 'tenant', scope: (k) => k.split(':')[0] as string }),
        tokenBucket({ capacity: 1_000, refillPerSecond: 1, name: 'all', scope: 'all' }),
      ],
      store: clusterStore(sources),
      prefix: prefix(),
    });
    await limiter.block('acme:alice', 60_000);
    const d = await limiter.tryAcquire('acme:alice');
    expect(d).toMatchObject({ allowed: false, blocked: true });
    expect(d.rules?.map((r) => r.name)).toEqual(['tenant', 'all']);
    // Nothing taken from the shared rules by a blocked key; another key of the tenant passes.
    const bob = await limiter.tryAcquire('acme:bob');
    expect(bob.allowed).toBe(true);
    expect(bob.rules?.find((r) => r.name === 'tenant')?.remaining).toBe(999);
    await limiter.unblock('acme:alice');
    expect((await limiter.tryAcquire('acme:alice')).allowed).toBe(true);
    expect(sources.filter((s) => s === 'fallback')).toEqual([]);
  });

  it("refund gives back to the key's own slot only; penalize charges every slot its rules live in", async () => {
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 10, windowMs: 600_000, name: 'user' }),
        fixedWindow({ limit: 100, windowMs: 600_000, name: 'all', scope: 'all' }),
      ],
      store: clusterStore(),
      prefix: prefix(),
    });
    for (const key of KEYS) await limiter.tryAcquire(key, { permits: 4 });
    for (const key of KEYS) await limiter.refund(key, 4);
    const afterRefund = await limiter.peek('user:1');
    expect(afterRefund.rules?.find((r) => r.name === 'user')?.remaining).toBe(10);
    expect(afterRefund.rules?.find((r) => r.name === 'all')?.remaining).toBe(100 - 4 * KEYS.length);
    await limiter.penalize('user:1', 20);
    const afterPenalty = await limiter.peek('user:2');
    expect(afterPenalty.rules?.find((r) => r.name === 'all')?.remaining).toBe(100 - 4 * KEYS.length - 20);
    expect(await limiter.tryAcquire('user:1')).toMatchObject({ allowed: false, rule: 'user' });
  });

  it('per-rule permits (rpm + tpm): one slot and across slots, all or nothing; a refused slot gives back what others took', async () => {
    const sources: DecisionEvent['source'][] = [];
    const sameSlot = createLimiter({
      rules: [
        fixedWindow({ limit: 5, windowMs: 600_000, name: 'rpm' }),
        fixedWindow({ limit: 1_000, windowMs: 600_000, name: 'tpm' }),
      ],
      store: clusterStore(sources),
      prefix: prefix(),
    });
    for (const key of KEYS) {
      const d = await sameSlot.tryAcquire(key, { permits: { rpm: 1, tpm: 600 } });
      expect(
        d.rules?.map((r) => r.remaining),
        key,
      ).toEqual([4, 400]);
      // 400 tokens left: 600 more is refused, taking no request either.
      expect((await sameSlot.tryAcquire(key, { permits: { rpm: 1, tpm: 600 } })).allowed).toBe(false);
      await sameSlot.refund(key, { tpm: 500 });
      await sameSlot.penalize(key, { rpm: 2 });
      expect(
        (await sameSlot.peek(key)).rules?.map((r) => r.remaining),
        key,
      ).toEqual([2, 900]);
    }
    // Tokens shared by the whole fleet (another slot than most keys'), requests per key.
    const across = createLimiter({
      rules: [
        fixedWindow({ limit: 3, windowMs: 600_000, name: 'rpm' }),
        fixedWindow({ limit: 1_000, windowMs: 600_000, name: 'tpm', scope: 'all' }),
      ],
      store: clusterStore(sources),
      prefix: prefix(),
    });
    const granted = [];
    for (const key of KEYS) granted.push((await across.tryAcquire(key, { permits: { rpm: 1, tpm: 90 } })).allowed);
    expect(granted.every(Boolean)).toBe(true);
    // 100 tokens left of the shared 1,000: a call asking 200 is refused and its request given back.
    expect((await across.tryAcquire('user:1', { permits: { rpm: 1, tpm: 200 } })).allowed).toBe(false);
    const peeked = await across.peek('user:1');
    expect(peeked.rules?.map((r) => r.remaining)).toEqual([2, 100]);
    await across.penalize('user:1', { rpm: 0, tpm: 100 });
    expect((await across.peek('user:2')).rules?.map((r) => r.remaining)).toEqual([2, 0]);
    expect(sources.filter((s) => s === 'fallback')).toEqual([]);
  });
});
