/**
 * Leased mode in one process against a real Redis: the lease script on its own, batching, the hoarding
 * cap, windows, hand-back on close, and Redis failing.
 */
import {
  type Algorithm,
  ManualClock,
  SluiceRangeError,
  SluiceTypeError,
  fixedWindow,
  gcra,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import type { LeaseEvent } from '@sluice/hybrid';
import { leasedLimiterOn } from '../harness/hybrid.js';
import { toConnection } from '@sluice/redis/internal';
import { leaseShape } from '../../packages/hybrid/src/lease-client.js';
import { leaseByScript, refundByScript } from '../harness/lease-script.js';
import { LEASE_PAYS_AT } from '../../packages/hybrid/src/leased-binding.js';
import { leaseScript, membershipScript } from '../../packages/redis/src/scripts.js';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { freePort } from '../harness/free-port.js';
import { useTestRedis } from '../harness/use-redis.js';
import { admitted } from './admitted.js';

const redis = useTestRedis();
let n = 0;
const prefix = () => `leased${Date.now()}-${n++}`;

/** One lease through the client the store uses, on rule `rule` (the script is the rule's own lease script). */
function lease(
  r: Redis,
  rule: Algorithm,
  keys: [string, string],
  want: number,
  node: string,
  now: number,
  divisor = 0,
  register = true,
) {
  return leaseByScript(toConnection(r), {
    stateKey: keys[0],
    lesseesKey: keys[1],
    shape: leaseShape(rule),
    want,
    nodeId: node,
    liveMs: 5_000,
    nowMs: now,
    hoardingDivisor: divisor === 0 ? undefined : divisor,
    register,
  });
}
const handBack = (r: Redis, rule: Algorithm, key: string, permits: number, leasedAt: number, now: number) =>
  refundByScript(toConnection(r), key, leaseShape(rule), permits, leasedAt, now);

describe('lease.lua on its own', () => {
  it('bucket: debits what it grants, refills at the rate, registers the lessee; PTTL until full + 1 s', async () => {
    const { redis: r } = redis();
    const key = `${prefix()}:{k}:lease.tb`;
    const lessees = `${key}:lessees`.replace(':lease.tb:', ':');
    const tb = tokenBucket({ capacity: 100, refillPerSecond: 10 });
    const take = (want: number, node: string, now: number, divisor = 0) =>
      lease(r, tb, [key, lessees], want, node, now, divisor);
    expect(await take(30, 'node-a', 1_000)).toMatchObject({
      granted: 30,
      retryMs: 0,
      decidedAtMs: 1_000,
      liveNodes: 1,
      expiresInMs: Infinity,
    });
    expect(await r.pttl(key)).toBeGreaterThan(3_000 + 900); // 30 tokens at 10/s = 3 s to full, + 1 s
    expect(await r.pttl(key)).toBeLessThanOrEqual(4_000);
    expect(await take(100, 'node-a', 1_000)).toMatchObject({ granted: 70, retryMs: 10_000 });
    // 500 ms later: 5 tokens back; a second node asks for 8, gets 5, and is told when 8 would be there.
    const short = await take(8, 'node-b', 1_500);
    expect([short.granted, short.liveNodes]).toEqual([5, 2]);
    expect(short.retryMs).toBeCloseTo(800, 6);
    expect(await r.zrange(lessees, '0', '-1')).toEqual(['node-a', 'node-b']);
    // With the hoarding cap (divisor 4): at most 100 / (4 x 2 live) = 12 per lease.
    expect((await lease(r, tb, [`${key}2`, lessees], 50, 'node-a', 1_600, 4)).granted).toBe(12);
  });

  it('a node registered lately only counts the lessee set (3 commands fewer); a set that is gone is registered again', async () => {
    const { redis: r } = redis();
    const key = `${prefix()}:{k}:lease.tb`;
    const lessees = `${key}:lessees`;
    const tb = tokenBucket({ capacity: 100, refillPerSecond: 10 });
    await lease(r, tb, [key, lessees], 1, 'node-a', 1_000);
    await r.config('RESETSTAT');
    const counted = await lease(r, tb, [key, lessees], 1, 'node-b', 1_100, 0, false);
    const stats = await r.info('commandstats');
    const calls = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    expect(['zadd', 'zremrangebyscore', 'pexpire', 'zcard'].map(calls)).toEqual([0, 0, 0, 1]);
    // node-b said it registered lately: it is counted as the set has it (node-a alone), and not added.
    expect([counted.granted, counted.liveNodes, counted.registered]).toEqual([1, 1, false]);
    expect(await r.zrange(lessees, '0', '-1')).toEqual(['node-a']);
    // The set is gone (a Redis that came back empty): the node registers after all.
    await r.del(lessees);
    expect((await lease(r, tb, [key, lessees], 1, 'node-b', 1_200, 0, false)).liveNodes).toBe(1);
    expect(await r.zrange(lessees, '0', '-1')).toEqual(['node-b']);
  });

  it("a lease is the rule's own consume: the state it leaves is the state exact mode would keep", async () => {
    const { redis: r } = redis();
    for (const rule of [
      tokenBucket({ capacity: 20, refillPerSecond: 5, initialPermits: 4 }),
      gcra({ permitsPerSecond: 10, burst: 6 }),
      fixedWindow({ limit: 7, windowMs: 1_000 }),
      slidingWindowCounter({ limit: 9, windowMs: 1_000 }),
    ]) {
      const key = `${prefix()}:{k}:${rule.kind}`;
      let state: unknown;
      for (const [want, now] of [
        [3, 10_100],
        [50, 10_400],
        [2, 11_300],
        [4, 12_050],
      ] as const) {
        const got = await lease(r, rule, [key, `${key}x`], Math.min(want, rule.burst), 'a', now);
        // The core algorithm, asked for the most it grants now, step by step from `want` down.
        let granted = 0;
        for (let t = Math.min(want, rule.burst); t >= 1 && granted === 0; t--) {
          const o = rule.consume(state as never, now, t, 0);
          if (o.allowed) [granted, state] = [t, o.state];
          else if (o.state !== undefined && state === undefined) state = o.state;
        }
        expect({ kind: rule.kind, now, granted: got.granted }).toEqual({ kind: rule.kind, now, granted });
        // Every state, a window's too, is its fields packed at the one state key.
        const fields = state === undefined ? undefined : (Object.values(state as object) as number[]);
        const raw = await r.getBuffer(key);
        const stored =
          raw === null ? undefined : Array.from({ length: raw.length / 8 }, (_, i) => raw.readDoubleLE(i * 8));
        expect(stored).toEqual(fields);
      }
    }
  });

  it('fixed window: at most the limit per window, the lease expires with the window', async () => {
    const { redis: r } = redis();
    const key = `${prefix()}:{k}:lease.fw`;
    const fw = fixedWindow({ limit: 10, windowMs: 1_000 });
    const run = (want: number, now: number) =>
      lease(r, fw, [key, `${key}x`], want, 'a', now).then((l) => [
        l.granted,
        l.retryMs,
        l.expiresInMs,
        l.liveNodes,
        l.windowStart,
      ]);
    expect(await run(6, 10_250)).toEqual([6, 0, 750, 1, 10_000]);
    expect(await run(6, 10_500)).toEqual([4, 500, 500, 1, 10_000]);
    expect(await run(6, 10_900)).toEqual([0, 100, 100, 1, 10_000]);
    expect(await run(6, 11_000)).toEqual([6, 0, 1_000, 1, 11_000]);
  });

  it("hands back with the rule's own refund: a bucket up to its capacity, a window only while it lasts", async () => {
    const { redis: r } = redis();
    const key = `${prefix()}:{k}:lease.tb`;
    const tb = tokenBucket({ capacity: 10, refillPerSecond: 1 });
    await lease(r, tb, [key, `${key}x`], 8, 'a', 0);
    await handBack(r, tb, key, 5, 0, 0);
    expect((await lease(r, tb, [key, `${key}x`], 10, 'a', 0)).granted).toBe(7);
    await handBack(r, tb, key, 20, 0, 0);
    expect((await lease(r, tb, [key, `${key}x`], 10, 'a', 0)).granted).toBe(10); // only up to full
    const fwKey = `${prefix()}:{k}:lease.fw`;
    const fw = fixedWindow({ limit: 10, windowMs: 1_000 });
    await lease(r, fw, [fwKey, `${fwKey}x`], 8, 'a', 500);
    await handBack(r, fw, fwKey, 3, 1_200, 600); // leased in another window: nothing goes back
    expect((await lease(r, fw, [fwKey, `${fwKey}x`], 10, 'a', 700)).granted).toBe(2);
    await handBack(r, fw, fwKey, 3, 500, 800);
    expect((await lease(r, fw, [fwKey, `${fwKey}x`], 10, 'a', 900)).granted).toBe(3);
  });

  it('the lessee set at 1,000 and at 10,000 lessees: the same commands per lease (Redis CPU printed), leases capped at burst / (4 x live)', async () => {
    const { redis: r } = redis();
    const tb = tokenBucket({ capacity: 100_000, refillPerSecond: 100_000 });
    const measured: { lessees: number; commands: string; usPerLease: number; granted: number[]; size: number }[] = [];
    for (const lessees of [1_000, 10_000]) {
      const key = `${prefix()}:{hot}:lease.tb`;
      const lesseesKey = `${key}:lessees`;
      const now = 1_000_000;
      // The fleet's lessees, all live (their last lease within liveMs), and 2,000 dead ones to sweep.
      for (let i = 0; i < lessees + 2_000; i += 1_000)
        await r.zadd(
          lesseesKey,
          ...Array.from({ length: 1_000 }, (_, j) => [i < lessees ? now : 1, `n${i + j}`]).flat(),
        );
      await lease(r, tb, [key, lesseesKey], 1, 'n0', now, 4); // sweeps the dead
      await r.config('RESETSTAT');
      const granted: number[] = [];
      for (let i = 0; i < 200; i++)
        granted.push((await lease(r, tb, [key, lesseesKey], 1_000, `n${(i * 37) % lessees}`, now + i, 4)).granted);
      const stats = await r.info('commandstats');
      const count = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
      const [calls, usec] = [...stats.matchAll(/cmdstat_(?:evalsha|fcall):calls=(\d+),usec=(\d+)/g)].reduce(
        ([c, u], m) => [c + Number(m[1]), u + Number(m[2])],
        [0, 0],
      );
      const commands = ['zadd', 'zremrangebyscore', 'zcard', 'pexpire', 'get', 'set']
        .map((c) => `${c}=${count(c)}`)
        .join(' ');
      measured.push({ lessees, commands, usPerLease: usec / calls, granted, size: await r.zcard(lesseesKey) });
    }
    console.table(measured.map(({ granted: _, ...m }) => m));
    const [small, large] = measured as [(typeof measured)[0], (typeof measured)[0]];
    // Every lease is the same few commands whatever the set's size (each O(log N) on the sorted set). Their
    // time is printed, not asserted: 200 leases' microseconds on a CI machine busy with other files once came
    // out 2.4x apart (a timed bound belongs in a bench).
    expect(large.commands).toBe(small.commands);
    // The dead were swept; the set holds the live lessees only.
    expect([small.size, large.size]).toEqual([1_000, 10_000]);
    // A lease is at most burst / (4 x live): 25 permits with 1,000 lessees, 2 with 10,000.
    expect(Math.max(...small.granted)).toBe(25);
    expect(Math.max(...large.granted)).toBe(2);
  });

  it('each hybrid script is loaded under the sha1 its registry computes', async () => {
    const { redis: r } = redis();
    for (const script of [leaseScript('tokenBucket'), leaseScript('fixedWindow'), membershipScript()]) {
      expect(await r.script('LOAD', script.source)).toBe(script.sha1);
    }
  });
});

describe('leasedLimiter', () => {
  it('shadow mode: every request allowed, would-be denials marked; a refused option leaves nothing open', async () => {
    const client = redis().redis;
    const clock = new ManualClock(1_000_000);
    const limiter = leasedLimiterOn({
      rules: tokenBucket({ capacity: 5, refillPerSecond: 0.001 }),
      redis: client,
      prefix: prefix(),
      clock,
      shadow: true,
    });
    const decisions = [];
    for (let i = 0; i < 8; i++) decisions.push(await limiter.tryAcquire('k'));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(decisions.filter((d) => d.shadowed === true)).toHaveLength(3);
    await limiter.close();
    // A client no store watches yet: a half-built limiter would leave its store's listener on it.
    const fresh = new Redis(redis().server.url);
    const listeners = fresh.listenerCount('error');
    expect(() =>
      leasedLimiterOn({
        rules: tokenBucket({ capacity: 5, refillPerSecond: 1 }),
        redis: fresh,
        prefix: 'bad prefix!',
      }),
    ).toThrow(SluiceRangeError);
    expect(() =>
      leasedLimiterOn({
        rules: tokenBucket({ capacity: 5, refillPerSecond: 1 }),
        redis: fresh,
        shadow: 'yes' as never,
      }),
    ).toThrow(SluiceTypeError);
    await new Promise((r) => setTimeout(r, 10));
    expect(fresh.listenerCount('error')).toBe(listeners);
    fresh.disconnect();
  });

  it('spends a batch locally: one Redis call per batch, never more than capacity + rate x T', async () => {
    const clock = new ManualClock(1_000_000);
    const limiter = leasedLimiterOn({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }),
      redis: redis().redis,
      prefix: prefix(),
      clock,
    });
    const leases: LeaseEvent[] = [];
    limiter.store.on('lease', (e) => leases.push(e));
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
    const limiter = leasedLimiterOn({
      rules: tokenBucket({ capacity: 100_000, refillPerSecond: 100_000 }),
      redis: redis().redis,
      prefix: prefix(),
      clock,
      targetMs: 100,
    });
    const leases: LeaseEvent[] = [];
    limiter.store.on('lease', (e) => leases.push(e));
    const settle = () => limiter.store.settled(); // a prefetch's reply has been credited
    // 20 requests per second for 3 s: 2 per targetMs, too few for a lease to pay: decided exactly.
    for (let i = 0; i < 60; i++) {
      await limiter.tryAcquire('k');
      await settle();
      clock.advance(50);
    }
    expect(leases).toEqual([]);
    // 200 per second: batches of about 20 (100 ms of 200/s; a prefetch tops the lease up from half of one).
    for (let i = 0; i < 600; i++) {
      await limiter.tryAcquire('k');
      if (i % 10 === 9) await settle();
      clock.advance(5);
    }
    const steady = leases.slice(3);
    expect(Math.min(...steady.map((e) => e.want))).toBeGreaterThanOrEqual(5);
    expect(Math.max(...steady.map((e) => e.want))).toBeLessThanOrEqual(40);
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
    const a = leasedLimiterOn({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 1 }),
      redis: redis().redis,
      prefix: p,
      clock,
      maxLease: 40,
      lowWater: 0,
    });
    // A cold key: decided exactly until its demand fills a batch worth leasing; then it leases 40, spends 1.
    for (let i = 0; i < LEASE_PAYS_AT; i++) expect((await a.tryAcquire('k')).allowed).toBe(true);
    await a.close();
    const b = leasedLimiterOn({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 1 }),
      redis: redis().redis,
      prefix: p,
      clock,
      maxLease: 100,
    });
    // The 39 unspent went back: what the exact decisions and the one leased permit took is gone.
    expect(await admitted(b, 'k', 150)).toBe(100 - LEASE_PAYS_AT);
    await b.close();
  });

  it('a key asked once is decided exactly: batched with other keys, no lessee bookkeeping, nothing to hand back', async () => {
    const { redis: r } = redis();
    const p = prefix();
    const limiter = leasedLimiterOn({
      rules: tokenBucket({ capacity: 10, refillPerSecond: 1, name: 'tb' }),
      redis: r,
      prefix: p,
      clock: new ManualClock(1_000),
    });
    const leases: LeaseEvent[] = [];
    limiter.store.on('lease', (e) => leases.push(e));
    const calls = async () => {
      const stats = await r.info('commandstats');
      return ['evalsha', 'eval', 'fcall'].reduce(
        (sum, command) => sum + Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0),
        0,
      );
    };
    // Its scripts loaded first (a lone call and a batch), so what is counted is only the calls themselves.
    await Promise.all(Array.from({ length: 3 }, (_, i) => limiter.tryAcquire(`warm:${i}`)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = await calls();
    const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => limiter.tryAcquire(`user:${i}`)));
    expect(decisions.every((d) => d.allowed && d.remaining === 9)).toBe(true);
    // One call for the first, the other 99 in batches of 64: no lease, no lessee set.
    expect((await calls()) - before).toBeLessThanOrEqual(3);
    expect(leases).toEqual([]);
    expect(await r.keys(`${p}:*lessees*`)).toEqual([]);
    // The exact decisions took from the lease's central state: a key asked again is decided exactly until
    // its demand fills a batch worth leasing (LEASE_PAYS_AT within targetMs), then leases what is left.
    expect(await admitted(limiter, 'user:0', 20)).toBe(9);
    expect(leases.reduce((sum, e) => sum + e.granted, 0)).toBe(9 - (LEASE_PAYS_AT - 2));
    // A refund of an exactly decided grant goes back to the central state.
    await limiter.refund('user:1', 1);
    expect(await admitted(limiter, 'user:1', 20)).toBe(10);
    await limiter.close();
  });

  it('caps each node at capacity / (4 x live lessees)', async () => {
    const clock = new ManualClock(0);
    const p = prefix();
    const nodes = [0, 1, 2, 3].map((i) =>
      leasedLimiterOn({
        rules: gcra({ permitsPerSecond: 100, burst: 1_600 }),
        redis: redis().redis,
        prefix: p,
        clock,
        nodeId: `n${i}`,
      }),
    );
    const leases: LeaseEvent[] = [];
    for (const node of nodes) node.store.on('lease', (e) => leases.push(e));
    for (let round = 0; round < 3; round++)
      for (const node of nodes) for (let i = 0; i < 60; i++) await node.tryAcquire('k');
    expect(leases.at(-1)?.liveNodes).toBe(4);
    // Every lease taken once all four were known is at most 1,600 / (4 x 4). (A burst of 1,600 leaves room for
    // such leases after the first nodes' larger ones and each node's first, exact, decisions.)
    expect(Math.max(...leases.filter((e) => e.liveNodes === 4).map((e) => e.granted))).toBe(100);
    await Promise.all(nodes.map((node) => node.close()));
  });

  it('leases of a window die with it', async () => {
    const clock = new ManualClock(10_000);
    const limiter = leasedLimiterOn({
      rules: fixedWindow({ limit: 10, windowMs: 1_000 }),
      redis: redis().redis,
      prefix: prefix(),
      clock,
      maxLease: 10,
    });
    expect((await limiter.tryAcquire('k')).allowed).toBe(true); // leases all 10 of window 10 s
    clock.advance(1_000);
    // The 9 left over belong to the old window: the new one starts from its own 10, no more.
    expect(await admitted(limiter, 'k', 30)).toBe(10);
    await limiter.close();
  });

  it('sliding window counter: at most the limit per aligned window, previous window weighed in', async () => {
    const clock = new ManualClock(0);
    const limiter = leasedLimiterOn({
      rules: slidingWindowCounter({ limit: 10, windowMs: 1_000 }),
      redis: redis().redis,
      prefix: prefix(),
      clock,
    });
    expect(await admitted(limiter, 'k', 30)).toBe(10);
    clock.set(1_500); // previous window's 10 weigh 5
    expect(await admitted(limiter, 'k', 30)).toBe(5);
    await limiter.close();
  });

  it('refuses what it cannot lease: policies, other algorithms, bad options', () => {
    const r = redis().redis;
    expect(() => leasedLimiterOn({ rules: slidingWindowLog({ limit: 1, windowMs: 1 }), redis: r })).toThrow(
      /supports tokenBucket, gcra, fixedWindow, calendarWindow and slidingWindowCounter, got "slidingWindowLog"/,
    );
    expect(() =>
      leasedLimiterOn({
        rules: [fixedWindow({ limit: 1, windowMs: 1, name: 'a' }), fixedWindow({ limit: 1, windowMs: 1, name: 'b' })],
        redis: r,
      }),
    ).toThrow(SluiceRangeError);
    expect(() => leasedLimiterOn({ rules: fixedWindow({ limit: 1, windowMs: 1 }), redis: {} as never })).toThrow(
      SluiceTypeError,
    );
    expect(() => leasedLimiterOn({ rules: fixedWindow({ limit: 1, windowMs: 1 }), redis: r, lowWater: 2 })).toThrow(
      /lowWater must be a number in 0..1, got 2/,
    );
    expect(() =>
      leasedLimiterOn({ rules: fixedWindow({ limit: 1, windowMs: 1 }), redis: r, failMode: 'maybe' as never }),
    ).toThrow(/failMode/);
    expect(() => leasedLimiterOn({ rules: fixedWindow({ limit: 1, windowMs: 1 }), redis: r, targetMs: 0 })).toThrow(
      /targetMs must be a finite number > 0, got 0/,
    );
  });
});

describe('leasedLimiter when Redis is unreachable', () => {
  it.each(['local', 'open', 'closed'] as const)(
    "failMode '%s': answers within the deadline and says so",
    async (failMode) => {
      const dead = new Redis({
        host: '127.0.0.1',
        port: await freePort(),
        retryStrategy: () => 100,
        lazyConnect: false,
      });
      dead.on('error', () => {});
      const limiter = leasedLimiterOn({
        rules: tokenBucket({ capacity: 8, refillPerSecond: 1 }),
        redis: dead,
        timeoutMs: 50,
        failMode,
      });
      const fallbacks: Error[] = [];
      limiter.store.on('store-error', (e) => fallbacks.push(e));
      const started = performance.now();
      const decisions = [];
      for (let i = 0; i < 4; i++) decisions.push((await limiter.tryAcquire('k')).allowed);
      expect(performance.now() - started).toBeLessThan(2_000); // only a hang breaks this
      expect(fallbacks.length).toBe(1);
      if (failMode === 'open') expect(decisions).toEqual([true, true, true, true]);
      if (failMode === 'closed') expect(decisions).toEqual([false, false, false, false]);
      // The share of a fleet Redis never counted: 1 / assumedNodes (10) of 8, at least 1; never all 8 on each node.
      if (failMode === 'local') expect(decisions).toEqual([true, false, false, false]);
      await limiter.close();
      dead.disconnect();
    },
  );
});
