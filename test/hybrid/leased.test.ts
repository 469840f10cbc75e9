/**
 * Leased mode in one process against a real Redis: the lease script on its own, batching, the hoarding
 * cap, windows, hand-back on close, and Redis failing.
 */
import { ManualClock, SluiceRangeError, SluiceTypeError, fixedWindow, gcra, slidingWindowCounter, slidingWindowLog, tokenBucket } from '@sluice/core';
import { type LeaseEvent, leasedLimiter } from '@sluice/hybrid';
import { type ScriptReply, bufferReply, runScript } from '@sluice/redis';
import { hybridScript } from '../../packages/hybrid/src/scripts.js';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { freePort } from '../harness/free-port.js';
import { useTestRedis } from '../harness/use-redis.js';
import { admitted } from './admitted.js';

const redis = useTestRedis();
let n = 0;
const prefix = () => `leased${Date.now()}-${n++}`;

function unpackLease(answer: ScriptReply) {
  const reply = bufferReply(answer, 'lease');
  return [0, 8, 16, 24, 32].map((o) => reply.readDoubleLE(o));
}

describe('lease.lua on its own', () => {
  it('bucket: debits what it grants, refills at the rate, registers the lessee; PTTL until full + 1 s', async () => {
    const { redis: r } = redis();
    const key = `${prefix()}:{k}:lease.tb`;
    const lessees = `${key}:lessees`.replace(':lease.tb:', ':');
    const args = (want: number, now: number) => ['bucket', '100', '0.01', '100', String(want), 'node-a', '5000', String(now), '0'];
    expect(unpackLease(await runScript(r, hybridScript('lease'), [key, lessees], args(30, 1_000)))).toEqual([30, 0, -1, 1, 0]);
    expect(await r.pttl(key)).toBeGreaterThan(3_000 + 900); // 30 tokens at 10/s = 3 s to full, + 1 s
    expect(await r.pttl(key)).toBeLessThanOrEqual(4_000);
    expect(unpackLease(await runScript(r, hybridScript('lease'), [key, lessees], args(100, 1_000)))).toEqual([70, 10_000, -1, 1, 0]);
    // 500 ms later: 5 tokens back; a second node asks for 8, gets 5, and is told when 8 would be there.
    const [granted, retry, , live] = unpackLease(await runScript(r, hybridScript('lease'), [key, lessees], ['bucket', '100', '0.01', '100', '8', 'node-b', '5000', '1500', '0']));
    expect([granted, live]).toEqual([5, 2]);
    expect(retry).toBeCloseTo(800, 6);
    expect(await r.zrange(lessees, '0', '-1')).toEqual(['node-a', 'node-b']);
    // With the hoarding cap (divisor 4): at most 100 / (4 x 2 live) = 12 per lease.
    const capped = unpackLease(await runScript(r, hybridScript('lease'), [`${key}2`, lessees], ['bucket', '100', '0.01', '100', '50', 'node-a', '5000', '1600', '4']));
    expect(capped[0]).toBe(12);
  });

  it('fixed window: at most the limit per window, the lease expires with the window', async () => {
    const { redis: r } = redis();
    const key = `${prefix()}:{k}:lease.fw`;
    const run = (want: number, now: number) => runScript(r, hybridScript('lease'), [key, `${key}x`], ['fixed', '10', '1000', '0', String(want), 'a', '5000', String(now), '0']).then(unpackLease);
    expect(await run(6, 10_250)).toEqual([6, 0, 750, 1, 10_000]);
    expect(await run(6, 10_500)).toEqual([4, 500, 500, 1, 10_000]);
    expect(await run(6, 10_900)).toEqual([0, 100, 100, 1, 10_000]);
    expect(await run(6, 11_000)).toEqual([6, 0, 1_000, 1, 11_000]);
  });

  it('hands back: a bucket up to its capacity, a window only while it lasts', async () => {
    const { redis: r } = redis();
    const key = `${prefix()}:{k}:lease.tb`;
    await runScript(r, hybridScript('lease'), [key, `${key}x`], ['bucket', '10', '0.001', '10', '8', 'a', '5000', '0', '0']);
    expect(Number(await runScript(r, hybridScript('lease_return'), [key], ['bucket', '10', '0.001', '5', '0', '0']))).toBe(5);
    expect(Number(await runScript(r, hybridScript('lease_return'), [key], ['bucket', '10', '0.001', '5', '0', '0']))).toBe(3); // only up to full
    const fw = `${prefix()}:{k}:lease.fw`;
    await runScript(r, hybridScript('lease'), [fw, `${fw}x`], ['fixed', '10', '1000', '0', '8', 'a', '5000', '500', '0']);
    expect(Number(await runScript(r, hybridScript('lease_return'), [fw], ['fixed', '10', '1000', '3', '1000', '600']))).toBe(0); // another window
    expect(Number(await runScript(r, hybridScript('lease_return'), [fw], ['fixed', '10', '1000', '3', '0', '600']))).toBe(3);
  });

  it('each hybrid script is loaded under the sha1 its registry computes', async () => {
    const { redis: r } = redis();
    for (const name of ['lease', 'lease_return', 'heartbeat'] as const) {
      const script = hybridScript(name);
      expect(await r.script('LOAD', script.source)).toBe(script.sha1);
    }
  });
});

describe('leasedLimiter', () => {
  it('spends a batch locally: one Redis call per batch, never more than capacity + rate x T', async () => {
    const clock = new ManualClock(1_000_000);
    const limiter = leasedLimiter({ algorithm: tokenBucket({ capacity: 100, refillPerSecond: 10 }), redis: redis().redis, prefix: prefix(), clock });
    const leases: LeaseEvent[] = [];
    limiter.on('lease', (e) => leases.push(e));
    expect(await admitted(limiter, 'k', 200)).toBe(100);
    expect(leases.every((e) => e.granted <= 25)).toBe(true); // capacity / (4 x 1 node)
    expect(leases.length).toBeLessThan(12);
    // The last lease came back short: the node asks again once a batch (25) is back, not per token.
    clock.advance(2_000);
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    clock.advance(500);
    expect(await admitted(limiter, 'k', 100)).toBe(25);
    await limiter.close();
  });

  it('sizes batches to about targetMs of recent demand, and prefetches so a steady caller never waits on Redis', async () => {
    const clock = new ManualClock(0);
    const limiter = leasedLimiter({ algorithm: tokenBucket({ capacity: 100_000, refillPerSecond: 100_000 }), redis: redis().redis, prefix: prefix(), clock, targetMs: 100 });
    const leases: LeaseEvent[] = [];
    limiter.on('lease', (e) => leases.push(e));
    const settle = () => new Promise((r) => setTimeout(r, 5)); // let a prefetch's reply arrive
    // 20 requests per second for 3 s: batches of about 2 (100 ms of 20/s).
    for (let i = 0; i < 60; i++) {
      await limiter.tryAcquire('k');
      await settle();
      clock.advance(50);
    }
    const slow = leases.slice(5);
    expect(Math.max(...slow.map((e) => e.want))).toBeLessThanOrEqual(3);
    // 2,000 per second: batches grow to about 200 (a prefetch tops the lease up from half of one).
    leases.length = 0;
    for (let i = 0; i < 1_000; i++) {
      await limiter.tryAcquire('k');
      if (i % 20 === 19) await settle();
      clock.advance(0.5);
    }
    const fast = leases.slice(-3);
    expect(Math.min(...fast.map((e) => e.want))).toBeGreaterThanOrEqual(50);
    expect(Math.max(...fast.map((e) => e.want))).toBeLessThanOrEqual(400);
    // Once warm, every lease was asked for ahead of need: no caller waited on Redis.
    expect(leases.slice(1).every((e) => e.prefetch)).toBe(true);
    await limiter.close();
  });

  it('hands unspent permits back on close', async () => {
    const clock = new ManualClock(0);
    const p = prefix();
    const a = leasedLimiter({ algorithm: tokenBucket({ capacity: 100, refillPerSecond: 1 }), redis: redis().redis, prefix: p, clock, maxBatch: 40, lowWater: 0 });
    expect((await a.tryAcquire('k')).allowed).toBe(true); // leases 40, spends 1
    await a.close();
    const b = leasedLimiter({ algorithm: tokenBucket({ capacity: 100, refillPerSecond: 1 }), redis: redis().redis, prefix: p, clock, maxBatch: 100 });
    expect(await admitted(b, 'k', 150)).toBe(99);
    await b.close();
  });

  it('caps each node at capacity / (4 x live lessees)', async () => {
    const clock = new ManualClock(0);
    const p = prefix();
    const nodes = [0, 1, 2, 3].map((i) => leasedLimiter({ algorithm: gcra({ rate: 100, burst: 800 }), redis: redis().redis, prefix: p, clock, nodeId: `n${i}` }));
    const leases: LeaseEvent[] = [];
    for (const node of nodes) node.on('lease', (e) => leases.push(e));
    for (let round = 0; round < 3; round++) for (const node of nodes) for (let i = 0; i < 60; i++) await node.tryAcquire('k');
    expect(leases.at(-1)?.liveNodes).toBe(4);
    // Every lease taken once all four were known is at most 800 / (4 x 4).
    expect(Math.max(...leases.filter((e) => e.liveNodes === 4).map((e) => e.granted))).toBe(50);
    await Promise.all(nodes.map((node) => node.close()));
  });

  it('leases of a window die with it', async () => {
    const clock = new ManualClock(10_000);
    const limiter = leasedLimiter({ algorithm: fixedWindow({ limit: 10, windowMs: 1_000 }), redis: redis().redis, prefix: prefix(), clock, maxBatch: 10 });
    expect((await limiter.tryAcquire('k')).allowed).toBe(true); // leases all 10 of window 10 s
    clock.advance(1_000);
    // The 9 left over belong to the old window: the new one starts from its own 10, no more.
    expect(await admitted(limiter, 'k', 30)).toBe(10);
    await limiter.close();
  });

  it('sliding window counter: at most the limit per aligned window, previous window weighed in', async () => {
    const clock = new ManualClock(0);
    const limiter = leasedLimiter({ algorithm: slidingWindowCounter({ limit: 10, windowMs: 1_000 }), redis: redis().redis, prefix: prefix(), clock });
    expect(await admitted(limiter, 'k', 30)).toBe(10);
    clock.set(1_500); // previous window's 10 weigh 5
    expect(await admitted(limiter, 'k', 30)).toBe(5);
    await limiter.close();
  });

  it('refuses what it cannot lease: policies, other algorithms, bad options', () => {
    const r = redis().redis;
    expect(() => leasedLimiter({ algorithm: slidingWindowLog({ limit: 1, windowMs: 1 }), redis: r })).toThrow(/supports tokenBucket, gcra, fixedWindow and slidingWindowCounter, got "slidingWindowLog"/);
    expect(() => leasedLimiter({ algorithm: [fixedWindow({ limit: 1, windowMs: 1, name: 'a' }), fixedWindow({ limit: 1, windowMs: 1, name: 'b' })], redis: r })).toThrow(SluiceRangeError);
    expect(() => leasedLimiter({ algorithm: fixedWindow({ limit: 1, windowMs: 1 }), redis: {} as never })).toThrow(SluiceTypeError);
    expect(() => leasedLimiter({ algorithm: fixedWindow({ limit: 1, windowMs: 1 }), redis: r, lowWater: 2 })).toThrow(/lowWater must be a number in 0..1, got 2/);
    expect(() => leasedLimiter({ algorithm: fixedWindow({ limit: 1, windowMs: 1 }), redis: r, failMode: 'maybe' as never })).toThrow(/failMode/);
    expect(() => leasedLimiter({ algorithm: fixedWindow({ limit: 1, windowMs: 1 }), redis: r, targetMs: 0 })).toThrow(/targetMs must be a finite number > 0, got 0/);
  });
});

describe('leasedLimiter when Redis is unreachable', () => {
  it.each(['local', 'open', 'closed'] as const)("failMode '%s': answers within the deadline and says so", async (failMode) => {
    const dead = new Redis({ host: '127.0.0.1', port: await freePort(), retryStrategy: () => 100, lazyConnect: false });
    dead.on('error', () => {});
    const limiter = leasedLimiter({ algorithm: tokenBucket({ capacity: 8, refillPerSecond: 1 }), redis: dead, timeoutMs: 50, failMode });
    const fallbacks: Error[] = [];
    limiter.on('store-error', (e) => fallbacks.push(e));
    const started = performance.now();
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push((await limiter.tryAcquire('k')).allowed);
    expect(performance.now() - started).toBeLessThan(2_000); // only a hang breaks this
    expect(fallbacks.length).toBe(1);
    if (failMode === 'open') expect(decisions).toEqual([true, true, true, true]);
    if (failMode === 'closed') expect(decisions).toEqual([false, false, false, false]);
    if (failMode === 'local') expect(decisions).toEqual([true, true, true, true]); // the local share of 8: all of it, one node
    await limiter.close();
    dead.disconnect();
  });
});
