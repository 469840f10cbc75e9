/**
 * Regression tests for defects an adversarial probe reproduced on real redis-server processes: hostile keys
 * on a Cluster, keys that collide only on Redis, limiters that shared state by default, throwing callbacks,
 * closed limiters that stayed bound, reset() without a deadline, the local fail mode's share, and a client
 * clock running ahead. Each failed on the code before the fix.
 */
import {
  type Decision,
  ManualClock,
  SluiceError,
  createLimiter,
  fixedWindow,
  memoryStore,
  systemClock,
  tokenBucket,
} from '@sluice/core';
import { leasedLimiterOn } from '../harness/hybrid.js';
import { leasedStore } from '@sluice/hybrid';
import { type DecisionEvent, type FallbackChargedEvent, type FleetEvent, redisStore } from '@sluice/redis';
import { fleetKey, stateKey } from '../../packages/redis/src/key-layout.js';
import { NodeIdentity, checkClockSkew, stateName } from '@sluice/core/internal';
import { RedisPresence, toConnection } from '@sluice/redis/internal';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { freePort } from '../harness/free-port.js';
import { spawnRedisServer } from '../harness/redis-server.js';
import { storeOnStoppedRedis } from '../harness/stopped-redis.js';
import { nextEvent, untilAsync } from '../harness/events.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let n = 0;
const prefix = () => `hard${++n}`;

/** A client to a port nothing listens on: every call fails, as with Redis down. */
async function deadClient(): Promise<Redis> {
  const client = new Redis({
    port: await freePort(),
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 1000,
  });
  client.on('error', () => {});
  return client;
}

const HOSTILE = ['}', '{', '{}', '}{', '}}{{', '{user:1}', 'user:1}', '{}user', 'a{b}c', '%7B', '%', '', 'tail{'];

describe('hostile keys on a Cluster (3 masters)', () => {
  const testCluster = useTestCluster();

  it('keys with braces and empty tags run beside normal keys under load: 0 store errors, exact counts, no fail mode', async () => {
    const sources: DecisionEvent['source'][] = [];
    // A deadline no busy machine misses: what must not happen here is a failure caused by a key.
    const store = redisStore({
      redis: testCluster().client,
      failMode: 'open',
      timeoutMs: 10_000,
      onDecision: (e) => sources.push(e.source),
      denyCache: false,
    });
    const errors: Error[] = [];
    store.on('store-error', (e) => errors.push(e));
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 600_000 }), store, prefix: prefix() });
    const keys = [
      ...HOSTILE.map((k) => `evil:${k}`),
      ...HOSTILE.filter((k) => k !== '').map((k) => k),
      ...Array.from({ length: 40 }, (_, i) => `user:${i}`),
    ];
    // 8 requests per key, all in flight together: batches mix hostile and normal keys.
    const decisions = await Promise.all(
      keys.flatMap((key) => Array.from({ length: 8 }, () => limiter.tryAcquire(key).then((d) => [key, d] as const))),
    );
    const allowed = new Map<string, number>();
    for (const [key, d] of decisions) allowed.set(key, (allowed.get(key) ?? 0) + (d.allowed ? 1 : 0));
    expect(errors).toEqual([]);
    expect(sources.filter((s) => s !== 'redis')).toEqual([]);
    for (const key of keys) expect(allowed.get(key), key).toBe(5);
    expect(store.healthy).toBe(true);
    await limiter.close();
    await store.close();
  });

  it('leased mode with hostile keys: exact per key, no fallback', async () => {
    const limiter = leasedLimiterOn({
      rules: tokenBucket({ capacity: 5, refillPerSecond: 0.001 }),
      redis: testCluster().client,
      failMode: 'open',
      timeoutMs: 10_000,
      prefix: prefix(),
    });
    const fallbacks: Error[] = [];
    limiter.store.on('store-error', (e) => fallbacks.push(e));
    for (const key of HOSTILE.filter((k) => k !== '').concat(['plain'])) {
      let granted = 0;
      for (let i = 0; i < 8; i++) if ((await limiter.tryAcquire(key)).allowed) granted++;
      expect(granted, key).toBe(5);
    }
    expect(fallbacks).toEqual([]);
    await limiter.close();
  });
});

describe('keys on standalone Redis', () => {
  it('lone surrogates stay distinct keys on Redis, as in memory', async () => {
    const keys = ['user:\uD800', 'user:\uDBFF', 'user:\uDC00', 'user:\uFFFD', 'user:%uD800', 'user:\uD83D\uDD25'];
    const rule = fixedWindow({ limit: 1, windowMs: 60_000 });
    const p = prefix();
    const onRedis = createLimiter({ rules: rule, store: redisStore({ redis: testRedis().redis }), prefix: p });
    const inMemory = createLimiter({ rules: rule, store: memoryStore(), prefix: p });
    for (const key of keys) {
      const [r, m] = [await onRedis.tryAcquire(key), await inMemory.tryAcquire(key)];
      expect(r.allowed, JSON.stringify(key)).toBe(true);
      expect(r.allowed).toBe(m.allowed);
    }
    expect((await onRedis.tryAcquire('user:\uD800')).allowed).toBe(false);
    await onRedis.close();
  });

  it('limiters of two services with default prefix and rule names do not share state', async () => {
    const { server } = testRedis();
    const [a, b] = [new Redis(server.url), new Redis(server.url)];
    const login = createLimiter({
      rules: fixedWindow({ limit: 5, windowMs: 900_000 }),
      store: redisStore({ redis: a }),
    });
    const api = createLimiter({
      rules: fixedWindow({ limit: 100, windowMs: 60_000 }),
      store: redisStore({ redis: b }),
    });
    const key = `ip:203.0.113.${++n}`;
    for (let i = 0; i < 100; i++) await api.tryAcquire(key);
    expect((await login.tryAcquire(key)).allowed).toBe(true);
    expect((await login.tryAcquire(key)).remaining).toBe(3);
    a.disconnect();
    b.disconnect();
  });

  it('an error about one key (a corrupt state) leaves the other keys of its batch on Redis and the store healthy', async () => {
    const { redis } = testRedis();
    const p = prefix();
    const rule = tokenBucket({ capacity: 3, refillPerSecond: 0.001 });
    await redis.set(stateKey(p, 'corrupt', stateName(rule)), 'x');
    const sources = new Map<string, string>();
    const store = redisStore({ redis, failMode: 'closed', onDecision: (e) => sources.set(e.key, e.source) });
    const errors: Error[] = [];
    store.on('store-error', (e) => errors.push(e));
    const limiter = createLimiter({ rules: rule, store, prefix: p });
    const keys = ['a', 'b', 'corrupt', 'c'];
    const decisions = await Promise.all(keys.map((k) => limiter.tryAcquire(k)));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, true]);
    expect(Object.fromEntries(sources)).toEqual({ a: 'redis', b: 'redis', corrupt: 'fallback', c: 'redis' });
    expect(errors).toEqual([]);
    expect(store.healthy).toBe(true);
    await limiter.close();
    await store.close();
  });
});

describe('user callbacks that throw', () => {
  it('an onDecision that throws once: every decision of the batch resolves, the error reaches callback-error', async () => {
    let thrown = 0;
    const store = redisStore({
      redis: testRedis().redis,
      onDecision: () => {
        if (thrown++ === 0) throw new Error('metrics exporter broke');
      },
    });
    const reported: Array<[unknown, string]> = [];
    store.on('callback-error', (error, where) => reported.push([error, where]));
    const limiter = createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 60_000 }), store, prefix: prefix() });
    const decisions = await Promise.all(['a', 'b', 'c', 'd'].map((k) => limiter.tryAcquire(k)));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(reported).toHaveLength(1);
    expect(reported[0]?.[1]).toBe('onDecision');
    await limiter.close();
    await store.close();
  });

  it('a store-error listener that throws: decisions still resolve by the fail mode', async () => {
    const client = await deadClient();
    const store = redisStore({ redis: client, failMode: 'open', timeoutMs: 30 });
    store.on('store-error', () => {
      throw new Error('pager is down');
    });
    const reported: string[] = [];
    store.on('callback-error', (_, where) => reported.push(where));
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), store, prefix: prefix() });
    const decisions = await Promise.all(['a', 'b', 'c', 'd'].map((k) => limiter.tryAcquire(k)));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true]);
    expect(reported).toEqual(["'store-error' listener"]);
    await limiter.close();
    await store.close();
    client.disconnect();
  });
});

describe('closed limiters', () => {
  it('are unbound from their store: a prefix binds again with new limits, and 50 cycles leave the heap flat', async () => {
    const store = redisStore({ redis: testRedis().redis });
    const p = prefix();
    const cycle = async (limit: number) => {
      const limiter = createLimiter({
        rules: fixedWindow({ limit, windowMs: 60_000, name: 'w' }),
        store,
        prefix: p,
      });
      await limiter.tryAcquire('k');
      await limiter.close();
    };
    for (let i = 1; i <= 5; i++) await cycle(i);
    const before = process.memoryUsage().heapUsed;
    for (let i = 6; i <= 55; i++) await cycle(i);
    const grownMb = (process.memoryUsage().heapUsed - before) / 1e6;
    console.log(
      `50 create/close cycles on one redisStore: heap ${grownMb >= 0 ? '+' : ''}${grownMb.toFixed(1)} MB (each ` +
        `used to keep about 2.9 MB)`,
    );
    expect(grownMb).toBeLessThan(40);
    await store.close();
  });
});

describe('reset() has a deadline and typed errors', () => {
  it('with Redis down, exact and leased reset() reject within about timeoutMs with STORE_UNAVAILABLE', async () => {
    const client = await deadClient();
    const store = redisStore({ redis: client, timeoutMs: 50 });
    const exact = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), store, prefix: prefix() });
    const leased = leasedLimiterOn({
      rules: tokenBucket({ capacity: 10, refillPerSecond: 1 }),
      redis: client,
      timeoutMs: 50,
      prefix: prefix(),
    });
    for (const limiter of [exact, leased]) {
      const started = performance.now();
      const error = await limiter.reset('k').then(
        () => undefined,
        (e: unknown) => e,
      );
      const took = performance.now() - started;
      expect(error).toBeInstanceOf(SluiceError);
      expect((error as SluiceError).code).toBe('STORE_UNAVAILABLE');
      expect(took).toBeLessThan(5_000); // only a hang breaks this; it took about timeoutMs
    }
    await exact.close();
    await leased.close();
    await store.close();
    client.disconnect();
  });

  it('on a read-only replica reset() rejects with STORE_UNAVAILABLE carrying the READONLY reply', async () => {
    const { server } = testRedis();
    const replica = await spawnRedisServer(['--replicaof', server.host, String(server.port)]);
    const client = new Redis(replica.url);
    try {
      const store = redisStore({ redis: client, failMode: 'open' });
      const limiter = createLimiter({
        rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
        store,
        prefix: prefix(),
      });
      const error = (await limiter.reset('k').catch((e: unknown) => e)) as SluiceError;
      expect(error).toBeInstanceOf(SluiceError);
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(String((error.cause as Error).message)).toMatch(/READONLY/);
      await limiter.close();
      await store.close();
    } finally {
      client.disconnect();
      await replica.stop();
    }
  });
});

/**
 * Three stores (failMode 'local') of `kind` on a Redis of their own (a leased store decides this cold key
 * exactly), one limiter of 10 per day, once every store has counted all three from its heartbeats; `close`
 * resumes a stalled Redis and stops it all. A day: the tests count one window's grants across a stall, and a
 * minute's boundary fell inside one test in about one run of fifty.
 */
async function countedFleet(kind: 'exact' | 'leased' = 'exact') {
  const server = await spawnRedisServer();
  const p = prefix();
  const clients = [0, 1, 2].map(() => {
    const client = new Redis({ port: server.port, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    return client;
  });
  const stores = clients.map((redis) =>
    kind === 'exact'
      ? redisStore({ redis, timeoutMs: 50, heartbeatMs: 100 })
      : leasedStore({ redis, timeoutMs: 50, heartbeatMs: 100 }),
  );
  const counted = stores.map((store) => nextEvent(store, 'fleet', (e: FleetEvent) => e.prefix === p && e.nodes === 3));
  const limiters = stores.map((store) =>
    createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 86_400_000 }), store, prefix: p }),
  );
  await Promise.all(counted);
  const close = async () => {
    server.process?.kill('SIGCONT');
    await Promise.all(limiters.map((l) => l.close()));
    await Promise.all(stores.map((s) => s.close()));
    for (const c of clients) c.disconnect();
    await server.stop();
  };
  /** Each node asks `perNode` times for 'k' while Redis is away: every answer the fail mode's; the grants counted. */
  const admittedByFallback = async (perNode: number) => {
    let admitted = 0;
    for (const limiter of limiters)
      for (let i = 0; i < perNode; i++) {
        const d = await limiter.tryAcquire('k');
        expect(d.source).toBe('fallback');
        if (d.allowed) admitted++;
      }
    return admitted;
  };
  return { server, stores, limiters, admittedByFallback, close };
}

describe("failMode 'local' holds this node's share, from the fleet Redis counted", () => {
  it.each(['exact', 'leased'] as const)(
    '%s: 3 nodes that Redis counted, then Redis stalls: together they admit at most the limit (each holds a third), charged to Redis on its return',
    async (kind) => {
      const { server, stores, limiters, admittedByFallback, close } = await countedFleet(kind);
      server.process?.kill('SIGSTOP');
      try {
        const admitted = await admittedByFallback(10);
        expect(admitted).toBe(9); // 3 per node: floor(10 / 3)
        // Redis returns: what the fail mode granted is charged there (9 of 10), so the window has 1 left for the
        // fleet, not a fresh 10 (19 in one window).
        const charged = stores.map((store) => nextEvent(store, 'fallback-charged'));
        server.process?.kill('SIGCONT');
        const events = (await Promise.all(charged)).map(([e]) => e as FallbackChargedEvent);
        // Each node's 3 grants, less what Redis ran late (the stall) and counted itself: the first call's, and on
        // a loaded machine a second one sent before the node knew Redis was away. Exactly 9 in all is what the
        // fleet's total below asserts (a charge short of it admits more than the limit, one past it less).
        for (const e of events) expect(e.permits).toBeLessThanOrEqual(2);
        expect(events.reduce((sum, e) => sum + e.permits, 0)).toBeGreaterThanOrEqual(3);
        // An exact peek reads Redis (a leased one only what this node holds): 1 left for the fleet.
        if (kind === 'exact') expect((await (limiters[0] as (typeof limiters)[0]).peek('k')).remaining).toBe(1);
        let after = 0;
        for (const l of limiters)
          for (let i = 0; i < 5; i++) {
            const d = await l.tryAcquire('k');
            expect(d.source).not.toBe('fallback');
            if (d.allowed) after++;
          }
        expect(admitted + after).toBe(10);
      } finally {
        await close();
      }
    },
  );

  it('one nodeId given to two live processes: the second to notice goes on under its own id (NODE_ID_REUSED), and the fleet counts two', async () => {
    const p = prefix();
    // Two workers of one pod, both given the pod's name: each would count the other as itself (one node, the
    // whole limit each in the fail mode).
    const stores = [0, 1].map(() => redisStore({ redis: testRedis().redis, heartbeatMs: 50, nodeId: 'pod-7' }));
    const reused = Promise.race(
      stores.map((store) =>
        nextEvent(store, 'store-error', (e: Error & { code?: string }) => e.code === 'NODE_ID_REUSED'),
      ),
    );
    const counted = stores.map((store) =>
      nextEvent(store, 'fleet', (e: FleetEvent) => e.prefix === p && e.nodes === 2),
    );
    const limiters = stores.map((store) =>
      createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 60_000 }), store, prefix: p }),
    );
    const [error] = (await reused) as [SluiceError];
    await Promise.all(counted);
    const ids = stores.map((store) => store.nodeId).sort();
    expect(ids[0]).toBe('pod-7');
    expect(ids[1]).toMatch(/^pod-7\.[0-9a-f]{12}$/);
    expect(error.message).toContain(`nodeId "pod-7" is used by another live process`);
    expect(error.message).toContain(JSON.stringify(ids[1]));
    // Once apart they stay apart: both ids go on being seen, three heartbeats each, with no other error.
    const errors: Error[] = [];
    for (const store of stores) store.on('store-error', (e) => errors.push(e));
    const fleet = fleetKey(p);
    const seen = async () => Promise.all(ids.map(async (id) => Number(await testRedis().redis.zscore(fleet, id))));
    const [first] = [await seen()];
    const beats = (now: number[]) => Math.min(...now.map((at, i) => (at - (first[i] as number)) / 50));
    await untilAsync(async () => beats(await seen()) >= 3, 'three heartbeats of each node');
    expect(await testRedis().redis.zcard(fleet)).toBe(2);
    expect(errors).toEqual([]);
    await Promise.all(limiters.map((l) => l.close()));
    await Promise.all(stores.map((s) => s.close()));
  });

  it("a process clock a minute from Redis's TIME is said at its first heartbeat (SLUICE_CLOCK_SKEW), naming the offset; a synced one is not", async () => {
    const warned = new Promise<Error>((resolve) => {
      const on = (w: Error & { code?: string }) => {
        if (w.code !== 'SLUICE_CLOCK_SKEW') return;
        process.off('warning', on);
        resolve(w);
      };
      process.on('warning', on);
    });
    const presence = (skewClock: { now(): number }) =>
      new RedisPresence({
        connection: toConnection(testRedis().redis),
        identity: new NodeIdentity(`skew-${prefix()}`, () => {}),
        heartbeatMs: 50,
        assumedNodes: 1,
        decisionClock: undefined,
        skewClock,
      });
    // In sync: the offset measured is this machine's (under a second, round trip included), and nothing is said.
    const sentAt = Date.now();
    const [seconds, micros] = (await testRedis().redis.time()).map(Number) as [number, number];
    const offset = checkClockSkew(
      sentAt,
      Date.now(),
      seconds * 1000 + micros / 1000,
      'this test',
      "its Redis's (TIME)",
    );
    expect(Math.abs(offset ?? Number.NaN)).toBeLessThan(1_000);
    const ahead = presence({ now: () => Date.now() + 60_000 });
    ahead.track(prefix());
    const warning = await warned;
    expect(warning.message).toMatch(/clock is (59,9\d\d|60,0\d\d) ms ahead of its Redis's \(TIME\)/);
    await ahead.close(100);
  });

  it('the fail mode starts each key from what Redis last told this node, not from a full share: a stall in mid-window admits the limit, no more', async () => {
    const { server, limiters, admittedByFallback, close } = await countedFleet();
    try {
      // 6 of 10 used on Redis, 2 by each node: the last answers said 8, 6 and 4 left.
      for (const limiter of limiters)
        for (let i = 0; i < 2; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(true);
      server.process?.kill('SIGSTOP');
      const admitted = await admittedByFallback(5);
      // Each node's third of what it last heard was left, rounded down: 2, 1 and 1 (a full third each: 9).
      expect(admitted).toBe(4);
    } finally {
      await close();
    }
  });

  it('a long outage charges Redis only what the fail mode still holds spent: a bucket refilled meanwhile owes nothing', async () => {
    const server = await spawnRedisServer();
    const p = prefix();
    const clock = new ManualClock(Date.now());
    const client = new Redis({ port: server.port, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    const store = redisStore({ redis: client, timeoutMs: 50, heartbeatMs: 100, clock });
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 10, refillPerSecond: 1 }), store, prefix: p });
    await nextEvent(store, 'fleet', (e: FleetEvent) => e.prefix === p && e.nodes === 1);
    expect((await limiter.tryAcquire('k', { permits: 2 })).remaining).toBe(8);
    server.process?.kill('SIGSTOP');
    try {
      let admitted = 0;
      for (let i = 0; i < 12; i++) if ((await limiter.tryAcquire('k')).allowed) admitted++;
      expect(admitted).toBe(8); // the fail mode's bucket starts where Redis's was (one node: the whole of it)
      // An hour passes: the local bucket is full again, as Redis's is.
      clock.advance(3_600_000);
      const charged = nextEvent(store, 'fallback-charged');
      server.process?.kill('SIGCONT');
      const [event] = (await charged) as [FallbackChargedEvent];
      expect(event).toMatchObject({ prefix: p, permits: 0, kept: 0 });
      expect((await limiter.peek('k')).remaining).toBe(10);
    } finally {
      server.process?.kill('SIGCONT');
      await limiter.close();
      await store.close();
      client.disconnect();
      await server.stop();
    }
  });

  it('a fleet Redis never answered for is taken to be assumedNodes nodes, never one node with the whole limit', async () => {
    const clients = await Promise.all([deadClient(), deadClient()]);
    const p = prefix();
    const limiters = clients.map((redis, i) =>
      createLimiter({
        rules: fixedWindow({ limit: 10, windowMs: 60_000 }),
        // The default assumption (10 nodes) for one, an explicit one for the other.
        store: redisStore({ redis, timeoutMs: 20, ...(i === 1 ? { assumedNodes: 2 } : {}) }),
        prefix: p,
      }),
    );
    const admitted = [];
    for (const limiter of limiters) {
      let n = 0;
      for (let i = 0; i < 10; i++) if ((await limiter.tryAcquire('k')).allowed) n++;
      admitted.push(n);
    }
    expect(admitted).toEqual([1, 5]); // floor(10 / 10), floor(10 / 2)
    await Promise.all(limiters.map((l) => l.close()));
    for (const c of clients) c.disconnect();
  });

  it("permits over the fail mode's share are never only while Redis is away: acquire waits for Redis, a timeout ends the wait", async () => {
    // The fleet is the assumed four nodes: a bucket of 25 of 100 each while Redis is away. A bucket, not a
    // window: the first ask reaches the stopped Redis and runs there on its return, counted (a late decision),
    // and a window would hold the waiting call to its end, a bucket for a refill's 0.6 s.
    const { store, resume, close } = await storeOnStoppedRedis({ timeoutMs: 50, assumedNodes: 4 });
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 100 }),
      store,
      prefix: prefix(),
    });
    try {
      const away = nextEvent(store, 'store-error');
      const acquired = limiter.acquire('k', { permits: 60 });
      await away;
      // A deadline within the outage: the fail mode's denial comes back, asked again until the deadline.
      const timed = await limiter.tryAcquire('k', { permits: 60, maxWaitMs: 1_200 });
      expect(timed).toMatchObject({ allowed: false, source: 'fallback', retryAfterMs: Infinity });
      resume();
      expect(await acquired).toBeGreaterThan(0);
      // Over the rule's limit itself: never, on any store, at once.
      await expect(limiter.acquire('k', { permits: 101 })).rejects.toMatchObject({ code: 'NEVER_ALLOWED' });
    } finally {
      await limiter.close();
      await close();
    }
  });

  it('is validated', () => {
    expect(() => redisStore({ redis: testRedis().redis, assumedNodes: 0 })).toThrow(
      /assumedNodes must be an integer >= 1, got 0/,
    );
    expect(() => redisStore({ redis: testRedis().redis, heartbeatMs: -1 })).toThrow(/heartbeatMs must be/);
    expect(() => redisStore({ redis: testRedis().redis, nodeId: 'a b' })).toThrow(/nodeId must be/);
    // A misspelt option is named, with the options there are, never ignored.
    expect(() => redisStore({ redis: testRedis().redis, expectedNodes: 3 } as never)).toThrow(
      /redisStore options have no option "expectedNodes".*assumedNodes/,
    );
  });
});

describe('a client clock running ahead', () => {
  it('is clamped to Redis TIME +- maxClockSkewMs: a node an hour ahead cannot starve the others for an hour', async () => {
    const { redis } = testRedis();
    const ahead = { now: () => systemClock.now() + 3_600_000 };
    const p = prefix();
    const rule = tokenBucket({ capacity: 10, refillPerSecond: 10 });
    const skewed = createLimiter({
      rules: rule,
      store: redisStore({ redis, clock: ahead, maxClockSkewMs: 1000, denyCache: false }),
      prefix: p,
    });
    const honest = createLimiter({
      rules: rule,
      store: redisStore({ redis, clock: 'client', denyCache: false }),
      prefix: p,
    });
    for (let i = 0; i < 10; i++) await skewed.tryAcquire('k');
    const d: Decision = await honest.tryAcquire('k');
    console.log(
      `a node 1 h ahead, clamped to 1 s: the others were told retryAfterMs ${d.retryAfterMs.toFixed(0)} ` +
        `(unclamped: about 3,600,000)`,
    );
    expect(d.retryAfterMs).toBeLessThan(2_500);
  });

  it("'client' clamps by default; maxClockSkewMs needs a client clock", () => {
    const { redis } = testRedis();
    expect(() => redisStore({ redis, maxClockSkewMs: 1000 })).toThrow(/needs clock 'client' or a Clock/);
    expect(() => redisStore({ redis, clock: 'client', maxClockSkewMs: -1 })).toThrow(
      /maxClockSkewMs must be a finite number > 0/,
    );
  });
});
