/**
 * The throttle on a bad day, on a real Redis: Redis stops answering while calls queue (the store's fail mode
 * decides and the queue moves on), a call aborted while queued leaves Redis's queue at once and consumes
 * nothing, close() rejects the waiters, and a process killed while it holds the turn frees the queue after
 * its lease.
 */
import { type Decision, type ThrottleEvent, createLimiter, fixedWindow, observeSluice, throttle } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { nextEvent, untilAsync } from '../harness/events.js';
import { startTestRedis } from '../harness/redis-server.js';
import { storeOnStoppedRedis } from '../harness/stopped-redis.js';
import { throttleProcess } from '../harness/throttle-process.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
let n = 0;
const prefix = () => `throttle-bad-${process.pid}-${++n}`;

/** A Redis of its own (to stall), a client, and a store with a short deadline. */
async function ownRedis(failMode: 'local' | 'closed' = 'local') {
  const server = await startTestRedis();
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  const store = redisStore({ redis, failMode, timeoutMs: 100 });
  cleanups.push(async () => {
    server.process?.kill('SIGCONT');
    await store.close();
    redis.disconnect();
    await server.stop();
  });
  return { server, redis, store };
}

/** The turn queue of `key` on Redis (see semaphoreKeys: the throttle's turn is the key '~turn:<key>'). */
const queueKey = (p: string, key = 'default') => `${p}{~turn:${key}}~q`;

/**
 * How many calls wait in the queue on Redis, read once what this process asked so far has reached it: the
 * read follows the store's own calls on the same connection, after this turn of the event loop.
 */
/**
 * Waits until `count` calls are queued on Redis: a call's join is a script call whose landing this test has no
 * event for (its first one waits for its library's load), so the queue is asked until it holds them.
 */
async function queuedOnRedis(redis: Redis, p: string, count: number): Promise<void> {
  await untilAsync(async () => (await redis.zcard(queueKey(p))) === count, `${count} calls queued on Redis`);
}

describe('the throttle on a bad day', () => {
  it("Redis stops answering while calls queue: the fail mode ('local') decides, every call starts, none hangs", async () => {
    const { server, redis, store } = await ownRedis('local');
    const p = prefix();
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 500 }), store, prefix: p });
    await limiter.ready();
    const calls = throttle({ limiter, leaseMs: 1_000 });
    cleanups.push(() => calls.close());
    const decisions: Decision[] = [];
    const run = () => calls.run((ticket) => void decisions.push(ticket.decision));
    // Five start at once, decided on Redis; seven more queue (one holds the turn, waiting for the window).
    await Promise.all(Array.from({ length: 5 }, run));
    const rest = Array.from({ length: 7 }, run);
    await queuedOnRedis(redis, p, 6);
    // Redis stalls with them queued.
    const degraded = nextEvent(store, 'store-error');
    server.process?.kill('SIGSTOP');
    await Promise.all(rest);
    await degraded;
    expect(decisions).toHaveLength(12);
    expect(decisions.slice(0, 5).every((d) => d.source === undefined)).toBe(true);
    expect(decisions.some((d) => d.source === 'fallback')).toBe(true);
  });

  it("permits over the fail mode's share wait for Redis, not refused as NEVER_ALLOWED (never is for the limit itself)", async () => {
    // The fleet is the assumed four nodes: 25 tokens each while Redis is away.
    const { store, resume, close } = await storeOnStoppedRedis({ timeoutMs: 100, assumedNodes: 4 });
    cleanups.push(close);
    const limiter = createLimiter({
      rules: fixedWindow({ name: 'tpm', limit: 100, windowMs: 60_000 }),
      store,
      prefix: prefix(),
    });
    const calls = throttle({ limiter });
    cleanups.push(() => calls.close());
    const refusedByFallback = new Promise<Decision>((resolve) => {
      const stop = observeSluice({
        decision: (e) => {
          if (e.source !== 'fallback' || e.decision.allowed) return;
          stop();
          resolve(e.decision);
        },
      });
    });
    const call = calls.run((ticket) => ticket.decision, { permits: 60, maxWaitMs: 60_000 });
    expect((await refusedByFallback).retryAfterMs).toBe(Infinity);
    resume();
    const decision = await call;
    expect(decision).toMatchObject({ allowed: true, remaining: 40 });
    expect(decision.source).toBeUndefined();
    // A call over the limit itself is still refused at once, Redis or not.
    await expect(calls.run(() => 'never', { permits: 101 })).rejects.toMatchObject({ code: 'NEVER_ALLOWED' });
  });

  it('an abort while queued leaves the queue on Redis at once and consumes nothing', async () => {
    const { redis, store } = await ownRedis();
    const p = prefix();
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), store, prefix: p });
    const calls = throttle({ limiter });
    cleanups.push(() => calls.close());
    await calls.run(() => undefined);
    const holder = calls.run(() => 'never', { maxWaitMs: 60_000 }).catch((e: { code: string }) => e.code);
    const controller = new AbortController();
    const left = new Promise<ThrottleEvent>((resolve) => {
      const stop = observeSluice({
        throttle: (e) => {
          if (e.type !== 'left') return;
          stop();
          resolve(e);
        },
      });
    });
    const aborted = calls.run(() => 'never', { signal: controller.signal });
    // Queued on Redis behind the holder.
    await queuedOnRedis(redis, p, 1);
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await left).toMatchObject({ type: 'left', reason: 'aborted', key: 'default' });
    await queuedOnRedis(redis, p, 0);
    await calls.close();
    expect(await holder).toBe('CLOSED');
    // One grant in all: the first call's.
    expect((await limiter.peek('default')).remaining).toBe(0);
    await limiter.reset('default');
    expect((await limiter.tryAcquire('default')).allowed).toBe(true);
  });

  it('close() with waiters: each rejects with CLOSED, nothing is left in the queue on Redis', async () => {
    const { redis, store } = await ownRedis();
    const p = prefix();
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), store, prefix: p });
    const calls = throttle({ limiter });
    await calls.run(() => undefined);
    const waiting = Array.from({ length: 5 }, () => calls.run(() => 'never').catch((e: { code: string }) => e.code));
    await queuedOnRedis(redis, p, 4);
    await calls.close();
    expect(await Promise.all(waiting)).toEqual(['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED', 'CLOSED']);
    await queuedOnRedis(redis, p, 0);
  });

  it('a process killed (SIGKILL) while it holds the turn: the queue moves on after its lease', async () => {
    const server = await startTestRedis();
    const redis = new Redis(server.url);
    const store = redisStore({ redis, timeoutMs: 200 });
    cleanups.push(async () => {
      await store.close();
      redis.disconnect();
      await server.stop();
    });
    const p = prefix();
    const other = throttleProcess({
      REDIS_URL: server.url,
      PREFIX: p,
      LIMIT: '1',
      WINDOW_MS: '60000',
      LEASE_MS: '1000',
      TIMEOUT_MS: '200',
    });
    cleanups.push(() => other.stop());
    await other.until('READY');
    // The other process's first call starts; its second holds the turn, waiting a minute for the window.
    await other.ask('run 1', 'ARRIVED');
    await other.until('START');
    await other.ask('run 2', 'ARRIVED');
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      store,
      prefix: p,
    });
    const calls = throttle({ limiter, leaseMs: 1_000 });
    cleanups.push(() => calls.close());
    await limiter.reset('default');
    const mine = calls.run(() => 'started');
    await queuedOnRedis(redis, p, 1);
    other.kill();
    // The dead holder's lease runs out (1 s, plus a renewal interval): this process's call gets the turn.
    expect(await mine).toBe('started');
  });

  it('a hostile key (spaces, braces) paused on one node: the other hears that key, and holds it', async () => {
    const { redis, store } = await ownRedis();
    const other = redisStore({ redis });
    cleanups.push(() => other.close());
    const p = prefix();
    const rule = fixedWindow({ limit: 100, windowMs: 60_000 });
    const a = throttle({ limiter: createLimiter({ rules: rule, store, prefix: p }) });
    const b = throttle({ limiter: createLimiter({ rules: rule, store: other, prefix: p }) });
    cleanups.push(
      () => a.close(),
      () => b.close(),
    );
    await other.ready();
    const key = 'tenant {a} b%7D  c';
    const heard = new Promise<ThrottleEvent>((resolve) => {
      const stop = observeSluice({
        throttle: (e) => {
          if (e.type !== 'paused' || e.origin !== 'fleet') return;
          stop();
          resolve(e);
        },
      });
    });
    await a.pause(30_000, key);
    expect(await heard).toMatchObject({ type: 'paused', key, ms: 30_000, origin: 'fleet' });
    expect(await b.pausedFor(key)).toBeGreaterThan(29_000);
    expect(await b.pausedFor('tenant')).toBe(0);
  });
});
