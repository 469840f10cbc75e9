/**
 * close() leaves nothing behind: no timers, sockets or listeners of sluice's own outlive the limiters and
 * stores, whatever mode (the caller's ioredis client stays open: it is theirs).
 */
import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();

/** Live timers and sockets of this process, by kind. */
function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

const listeners = (client: Redis) =>
  Object.fromEntries(client.eventNames().map((e) => [String(e), client.listenerCount(e)]));

describe('close()', () => {
  it('exact, leased and divided limiters leave no timer, socket or listener behind', async () => {
    const client = new Redis(redis().server.url);
    await client.ping();
    await new Promise((r) => setTimeout(r, 50));
    const before = resources();
    const listenersBefore = listeners(client);

    const store = redisStore({ redis: client, timeoutMs: 50 });
    // A window far longer than the warm-up loop, so k0 is still exhausted when the waiting caller arrives
    // (with 1 s, a slow machine crossed the boundary and the caller was admitted instead of waiting).
    const exact = createLimiter({
      rules: fixedWindow({ limit: 5, windowMs: 30_000 }),
      store,
      prefix: `leaks${Date.now()}`,
    });
    const leased = leasedLimiterOn({
      rules: tokenBucket({ capacity: 50, refillPerSecond: 10 }),
      redis: client,
      prefix: `leaks-l${Date.now()}`,
    });
    const divided = dividedLimiterOn({
      rules: tokenBucket({ capacity: 50, refillPerSecond: 10 }),
      redis: client,
      prefix: `leaks-d${Date.now()}`,
      heartbeatMs: 20,
    });
    for (let i = 0; i < 200; i++)
      await Promise.all([
        exact.tryAcquire(`k${i % 7}`),
        leased.tryAcquire(`k${i % 7}`),
        divided.tryAcquire(`k${i % 7}`),
      ]);
    // A waiting caller, cut short by close().
    const waiting = exact.tryAcquire('k0', { maxWaitMs: 60_000 }).catch((error: unknown) => error);
    await new Promise((r) => setTimeout(r, 100));
    expect(Object.values(resources()).reduce((a, b) => a + b, 0)).toBeGreaterThan(
      Object.values(before).reduce((a, b) => a + b, 0),
    );

    await Promise.all([exact.close(), leased.close(), divided.close()]);
    await store.close();
    expect(await waiting).toMatchObject({ code: 'CLOSED' });
    // Let sockets finish closing, then compare.
    await new Promise((r) => setTimeout(r, 200));
    // Nothing more of any kind than before (a timer of the harness's may have ended meanwhile).
    const after = resources();
    for (const [kind, count] of Object.entries(after)) expect(count, kind).toBeLessThanOrEqual(before[kind] ?? 0);
    expect(listeners(client)).toEqual(listenersBefore);
    // Timers that do not hold the process open (heartbeats are unref'd) do not show above: nothing closed
    // may still talk to Redis, so count the commands Redis runs over 10 heartbeats.
    const calls = async () =>
      [...(await client.info('commandstats')).matchAll(/cmdstat_(\w+):calls=(\d+)/g)]
        .filter((m) => m[1] !== 'info')
        .reduce((n, m) => n + Number(m[2]), 0);
    const quietBefore = await calls();
    await new Promise((r) => setTimeout(r, 200));
    expect(await calls()).toBe(quietBefore);
    client.disconnect();
  });
});

describe('a createLimiter its store refuses', () => {
  it('leaves no timer or listener behind: its lists and limited-keys sketch are not started, or are stopped', async () => {
    const client = new Redis(redis().server.url);
    await client.ping();
    const store = redisStore({ redis: client, timeoutMs: 5_000 });
    const prefix = `refused${Date.now()}`;
    // The prefix is held with other rules: a second limiter on it is refused when its rules are bound.
    const holder = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 30_000 }), store, prefix });
    await holder.ready();
    const before = resources();
    const listenersBefore = listeners(client);
    for (let i = 0; i < 20; i++) {
      expect(() =>
        createLimiter({
          rules: tokenBucket({ capacity: 1, refillPerSecond: 1 }),
          store,
          prefix,
          accessList: { refreshMs: 1_000 },
          limitedKeys: { flushMs: 1_000 },
        }),
      ).toThrow();
    }
    // Before: each refused limiter kept its lists' refresh and its sketch's flush timers, and their reads of
    // Redis went on after every limiter and the store were closed.
    expect(resources()).toEqual(before);
    expect(listeners(client)).toEqual(listenersBefore);
    await holder.close();
    await store.close();
    client.disconnect();
  });
});

describe('many stores on one client', () => {
  it('hold one error and one ready listener on it between them, and none once all are closed', async () => {
    const client = new Redis(redis().server.url);
    await client.ping();
    const before = listeners(client);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const stores = Array.from({ length: 12 }, () => redisStore({ redis: client }));
    const limiters = stores.map((store, i) =>
      createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }), store, prefix: `many${Date.now()}-${i}` }),
    );
    await Promise.all(limiters.map((l) => l.tryAcquire('k')));
    expect(client.listenerCount('error')).toBe((before.error ?? 0) + 1);
    expect(client.listenerCount('ready')).toBe((before.ready ?? 0) + 1);
    await Promise.all(limiters.map((l) => l.close()));
    await Promise.all(stores.map((s) => s.close()));
    expect(listeners(client)).toEqual(before);
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    client.disconnect();
  });
});
