/**
 * Defects of the Redis semaphore a probe reproduced, each a regression test:
 * - a caller with a shorter leaseMs (a rolling deploy) set the holders set's expiry from its own lease, and
 *   Redis deleted the set with another process's live holder inside: two callers in a max-1 section;
 * - slots a 'local' fail mode granted during an outage were invisible to Redis after it came back (a third
 *   caller admitted on max 2), and a call queued while offline left a phantom holder behind;
 * - an abort that fired during acquire's first attempt was never seen (memory and Redis).
 */
import { type ConcurrencyLimiter, ManualClock, SluiceError, concurrencyLimiter, memoryStore } from '@sluice/core';
import { type FleetEvent, type RedisStore, redisStore } from '@sluice/redis';
import { semaphoreKeys } from '../../packages/redis/src/key-layout.js';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { nextEvent } from '../harness/events.js';
import { startTestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let n = 0;
const prefix = () => `semhard-${process.pid}-${++n}`;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function track<T extends { close(): Promise<void> }>(value: T): T {
  cleanups.push(() => value.close());
  return value;
}

describe('mixed leaseMs on one key (a rolling deploy)', () => {
  it("a caller with a shorter lease never shortens the set's life below a live holder's lease end", async () => {
    const { redis } = testRedis();
    const p = prefix();
    // Two "processes": their own stores and limiters, one with a 30 s lease, one with 1.2 s.
    const long = track(concurrencyLimiter({ max: 1, leaseMs: 30_000, prefix: p, store: track(redisStore({ redis })) }));
    const short = track(concurrencyLimiter({ max: 1, leaseMs: 1_200, prefix: p, store: track(redisStore({ redis })) }));
    const held = await long.acquire('k');
    // The short-lease process waits its turn briefly: queuing writes the key's expiry from its own lease.
    await expect(short.acquire('k', { maxWaitMs: 100 })).rejects.toMatchObject({ code: 'WAIT_EXPIRED' });
    const [holders] = semaphoreKeys(p, 'k');
    const ttl = await redis.pttl(holders as string);
    // The set lives at least as long as the long holder's lease (less the few ms since it was granted).
    expect(ttl).toBeGreaterThan(25_000);
    await held.release();
  });
});

describe("failMode 'local': what the fail mode did reaches Redis when it answers again", () => {
  /**
   * Two processes on one key of 4 slots, on a Redis that can be stalled: `a` on a store with failMode 'local'
   * (its share, once both are counted, is 2), `b` on its own connection. Resolves once `a`'s store counted both.
   */
  async function twoProcesses() {
    const server = await startTestRedis();
    const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    const other = new Redis(server.url);
    cleanups.push(async () => {
      client.disconnect();
      other.disconnect();
      await server.stop();
    });
    const p = prefix();
    const store: RedisStore = track(redisStore({ redis: client, failMode: 'local', timeoutMs: 50 }));
    const counted = nextEvent(store, 'fleet', (e: FleetEvent) => e.prefix === p && e.nodes === 2);
    const a = track(concurrencyLimiter({ max: 4, prefix: p, store, leaseMs: 5_000 }));
    const b = track(
      concurrencyLimiter({ max: 4, prefix: p, store: track(redisStore({ redis: other })), leaseMs: 5_000 }),
    );
    await counted;
    return { server, other, p, store, a, b };
  }

  it('slots held locally are registered before Redis grants another; an offline call leaves no phantom holder', async () => {
    // Two processes share the key's 4 slots: while Redis is away, each holds its share, 2.
    const { server, other, p, store, a, b } = await twoProcesses();
    server.process?.kill('SIGSTOP');
    // Two slots from the fail mode: the first call was already on the wire (it lands once Redis resumes).
    const first = await a.acquire('k', { maxWaitMs: 0 });
    const second = await a.acquire('k', { maxWaitMs: 0 });
    // Its share is spent: the fail mode grants no third.
    expect(await a.tryAcquire('k')).toBeUndefined();
    const back = new Promise<void>((resolve) => store.once('store-recovered', () => resolve()));
    server.process?.kill('SIGCONT');
    await back;
    // This process's own next call goes to Redis after the reconcile: both its slots are counted there, so
    // the other process finds two of the four free, and no more.
    const c = await a.tryAcquire('k');
    expect(c).toBeDefined();
    const d = await b.tryAcquire('k');
    expect(d).toBeDefined();
    expect(await b.tryAcquire('k')).toBeUndefined();
    const [holders] = semaphoreKeys(p, 'k');
    expect(await other.zcard(holders as string)).toBe(4);
    await first.release();
    await second.release();
    await c?.release();
    // Released on Redis, and the late offline call left no phantom: the other process gets the three free.
    const got = [await b.tryAcquire('k'), await b.tryAcquire('k'), await b.tryAcquire('k')];
    expect(got.map((slot) => slot !== undefined)).toEqual([true, true, true]);
    for (const slot of [d, ...got]) await slot?.release();
  });

  it("this node's holders on Redis take their part of its share: a stalled Redis never puts more than the share inside here", async () => {
    const { server, store, a, b } = await twoProcesses();
    // This node holds one slot on Redis, the other node two: one of the four is free.
    const onRedis = await a.acquire('k');
    const theirs = [await b.acquire('k'), await b.acquire('k')];
    server.process?.kill('SIGSTOP');
    // Its share is 2, one of them its holder on Redis (still inside): the fail mode grants one more, not two.
    const local = await a.acquire('k', { maxWaitMs: 0 });
    expect(await a.tryAcquire('k')).toBeUndefined();
    // Its holder on Redis leaves: that part of the share is free again.
    const released = onRedis.release();
    const next = await a.acquire('k', { maxWaitMs: 0 });
    expect(await a.tryAcquire('k')).toBeUndefined();
    const back = new Promise<void>((resolve) => store.once('store-recovered', () => resolve()));
    server.process?.kill('SIGCONT');
    await back;
    await released;
    for (const slot of [local, next, ...theirs]) await slot.release();
  });
});

describe('an abort during the first attempt', () => {
  /** A store whose first attempt is held until `go()`: the abort fires while it is out. */
  async function abortedMidAttempt(limiter: ConcurrencyLimiter, hold: () => Promise<void>) {
    const aborted = new AbortController();
    const call = limiter.acquire('k', { signal: aborted.signal, maxWaitMs: 60_000 });
    aborted.abort();
    await hold();
    return call;
  }

  it('memory: the caller is rejected ABORTED, is not queued, and a later caller gets the slot', async () => {
    const limiter = track(concurrencyLimiter({ max: 1, store: memoryStore({ clock: new ManualClock(0) }) }));
    const held = await limiter.acquire('k');
    const call = abortedMidAttempt(limiter, async () => {});
    await expect(call).rejects.toMatchObject({ code: 'ABORTED' });
    expect(limiter.waiting('k')).toBe(0);
    await held.release();
    const next = await limiter.tryAcquire('k');
    expect(next).toBeDefined();
    await next?.release();
  });

  it('Redis: the caller leaves no place in the shared queue, and gets no slot later', async () => {
    const { redis } = testRedis();
    const p = prefix();
    const limiter = track(concurrencyLimiter({ max: 1, prefix: p, store: track(redisStore({ redis })) }));
    const held = await limiter.acquire('k');
    const call = abortedMidAttempt(limiter, async () => {});
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('ABORTED');
    expect(limiter.waiting('k')).toBe(0);
    const [, queue] = semaphoreKeys(p, 'k');
    // Its place on Redis is dropped (the leave follows the reply it raced).
    for (let i = 0; i < 100 && (await redis.zcard(queue as string)) > 0; i++) await new Promise((r) => setImmediate(r));
    expect(await redis.zcard(queue as string)).toBe(0);
    await held.release();
    const next = await limiter.tryAcquire('k');
    expect(next).toBeDefined();
    await next?.release();
  });

  it('a free slot granted to an aborted caller is given straight back', async () => {
    const { redis } = testRedis();
    const p = prefix();
    const limiter = track(concurrencyLimiter({ max: 1, prefix: p, store: track(redisStore({ redis })) }));
    const aborted = new AbortController();
    const call = limiter.acquire('k', { signal: aborted.signal });
    aborted.abort();
    await expect(call).rejects.toMatchObject({ code: 'ABORTED' });
    const next = await limiter.tryAcquire('k');
    expect(next).toBeDefined();
    await next?.release();
  });
});
