/**
 * Configuration checks at construction: errors for what cannot work, one-time warnings for what works
 * worse than the user likely expects.
 */
import { SluiceRangeError, createLimiter, fixedWindow, memoryStore, slidingWindowLog, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';
import { descriptorKey, fleetKey } from '../../packages/redis/src/key-layout.js';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../harness/free-port.js';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
const warnings: { code?: string; message: string }[] = [];
const onWarning = (w: Error & { code?: string }) => warnings.push({ code: w.code, message: w.message });
process.on('warning', onWarning);
afterEach(() => {
  warnings.length = 0;
});
const settle = () => new Promise((r) => setImmediate(r)); // process warnings are emitted on the next tick

describe('two limiters on one prefix of one store', () => {
  it.each([
    ['memoryStore', () => memoryStore()],
    ['redisStore', () => redisStore({ redis: redis().redis })],
  ])('%s: refused when their rules differ, allowed when they are the same', async (_name, makeStore) => {
    const store = makeStore();
    createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 1_000 }), store, prefix: 'shared' });
    createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 1_000 }), store, prefix: 'shared' }); // the same limiter twice: fine
    const clash = () =>
      createLimiter({
        rules: tokenBucket({ capacity: 10, refillPerSecond: 10, name: 'fw-10-per-1s' }),
        store,
        prefix: 'shared',
      });
    expect(clash).toThrow(SluiceRangeError);
    expect(clash).toThrow(
      /prefix "shared" is already used in this store by a limiter with other rules \(fw-10-per-1s:fixedWindow\(limit=10,windowMs=1000\)\)/,
    );
    expect(() =>
      createLimiter({ rules: fixedWindow({ limit: 11, windowMs: 1_000 }), store, prefix: 'shared' }),
    ).toThrow(SluiceRangeError);
    createLimiter({ rules: slidingWindowLog({ limit: 10, windowMs: 1_000 }), store, prefix: 'other' }); // its own prefix: fine
    await store.close();
  });
});

describe('one-time warnings', () => {
  it('an ioredis client that queues commands forever with no command timeout', async () => {
    const client = new Redis({ port: await freePort(), lazyConnect: true, maxRetriesPerRequest: null });
    const a = redisStore({ redis: client });
    const b = redisStore({ redis: client });
    await settle();
    expect(warnings.filter((w) => w.code === 'SLUICE_OFFLINE_QUEUE')).toHaveLength(1);
    expect(warnings[0]?.message).toMatch(/retries them forever \(maxRetriesPerRequest: null\) with no commandTimeout/);
    await Promise.all([a.close(), b.close()]);
    // Bounded retries, or a command timeout, or no offline queue: nothing to say.
    for (const options of [
      {},
      { maxRetriesPerRequest: null, commandTimeout: 100 },
      { maxRetriesPerRequest: null, enableOfflineQueue: false },
    ]) {
      const quiet = redisStore({ redis: new Redis({ port: await freePort(), lazyConnect: true, ...options }) });
      await quiet.close();
    }
    await settle();
    expect(warnings.filter((w) => w.code === 'SLUICE_OFFLINE_QUEUE')).toHaveLength(1);
  });

  it('a Cluster client with a policy whose rules cannot share a slot', async () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: await freePort() }], { lazyConnect: true });
    const store = redisStore({ redis: cluster, denyCache: false });
    const policy = () => [
      fixedWindow({ limit: 10, windowMs: 1_000, name: 'user' }),
      fixedWindow({ limit: 100, windowMs: 1_000, name: 'global', scope: 'all' }),
    ];
    createLimiter({ rules: policy(), store, prefix: 'api' });
    createLimiter({ rules: policy(), store, prefix: 'api' });
    createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 1_000 }), store, prefix: 'plain' });
    await settle();
    const crossSlot = warnings.filter((w) => w.code === 'SLUICE_CROSS_SLOT');
    expect(crossSlot).toHaveLength(1);
    expect(crossSlot[0]?.message).toMatch(/one script call per slot/);
    expect(warnings.filter((w) => w.code?.startsWith('SLUICE_CROSS_SLOT'))).toHaveLength(1);
    await store.close();
    cluster.disconnect();
  });
});

describe('expiry never rounds to zero', () => {
  it('a window below 1 ms is refused at construction', () => {
    expect(() => fixedWindow({ limit: 1, windowMs: 0.001 })).toThrow(/windowMs must be an integer >= 1, got 0.001/);
  });

  it.each([
    ['a 1 ms fixed window', fixedWindow({ limit: 1, windowMs: 1 })],
    ['a bucket that refills in a picosecond', tokenBucket({ capacity: 1, refillPerSecond: 1e12 })],
  ])('%s: its state key has a TTL of at least a second, never none', async (_name, algorithm) => {
    const { redis: client } = redis();
    const prefix = `ttl${Date.now()}${Math.random().toString(36).slice(2, 6)}`;
    const store = redisStore({ redis: client, clock: 'client' });
    const limiter = createLimiter({ rules: algorithm, store, prefix });
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    // The limiter's state key (beside it, its fleet's count, which lives three heartbeats, and its descriptor).
    const [key] = (await client.keys(`${prefix}{*`)).filter(
      (name) => name !== fleetKey(prefix) && name !== descriptorKey(prefix),
    );
    expect(key).toBeDefined();
    const pttl = await client.pttl(key as string);
    expect(pttl).toBeGreaterThan(900);
    expect(pttl).toBeLessThanOrEqual(1_001);
    await store.close();
  });
});
