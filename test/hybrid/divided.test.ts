/**
 * Divided mode in one process against a real Redis: conservative start, shares from heartbeats, scaling
 * (not refilling) on a membership change, and no Redis call on the decision path.
 */
import { ManualClock, SluiceRangeError, fixedWindow, tokenBucket } from '@sluice/core';
import type { DividedStore, MembershipEvent } from '@sluice/hybrid';
import { dividedLimiterOn, type OwnedLimiter } from '../harness/hybrid.js';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { admitted } from './admitted.js';

const redis = useTestRedis();
let n = 0;
const prefix = () => `divided${Date.now()}-${n++}`;

/** Resolves with the first membership event that satisfies `ok` (bounded: heartbeats are 50 ms here). */
function membership(
  limiter: OwnedLimiter<DividedStore>,
  ok: (e: MembershipEvent) => boolean,
): Promise<MembershipEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no such membership within 5 s')), 5_000);
    const on = (e: MembershipEvent) => {
      if (!ok(e)) return;
      clearTimeout(timer);
      limiter.store.off('membership', on);
      resolve(e);
    };
    limiter.store.on('membership', on);
  });
}

async function evalCalls(r: Redis): Promise<number> {
  const stats = await r.info('commandstats');
  return [...stats.matchAll(/cmdstat_(?:evalsha|eval|fcall):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('dividedLimiter', () => {
  it('starts with a conservative share, then takes its share from the membership, scaling what it holds', async () => {
    const clock = new ManualClock(0);
    const a = dividedLimiterOn({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }),
      redis: redis().redis,
      prefix: prefix(),
      clock,
      heartbeatMs: 50,
      nodeId: 'a',
    });
    const seen = membership(a, (e) => e.nodes === 1);
    // Before any heartbeat has answered: 100 / assumedNodes (10).
    expect(await admitted(a, 'k', 20)).toBe(10);
    expect(await seen).toMatchObject({ nodes: 1, share: 1 });
    // The share grew tenfold, but the 0 tokens it held scale to 0: nothing is refilled by the change.
    expect(await admitted(a, 'k', 5)).toBe(0);
    clock.advance(1_000);
    expect(await admitted(a, 'k', 20)).toBe(10);
    await a.close();
  });

  it("'equal': two nodes each enforce half; when one leaves, the other takes the whole limit", async () => {
    const clock = new ManualClock(0);
    const p = prefix();
    const make = (id: string) =>
      dividedLimiterOn({
        rules: fixedWindow({ limit: 100, windowMs: 60_000 }),
        redis: redis().redis,
        prefix: p,
        clock,
        heartbeatMs: 50,
        nodeId: id,
      });
    const a = make('a');
    const b = make('b');
    await Promise.all([membership(a, (e) => e.nodes === 2), membership(b, (e) => e.nodes === 2)]);
    expect(await admitted(a, 'k', 80)).toBe(50);
    expect(await admitted(b, 'k', 80)).toBe(50);
    const alone = membership(a, (e) => e.nodes === 1);
    await b.close(); // leaves the membership at once
    expect(await alone).toEqual({ prefix: p, rule: 'fw-100-per-1m', nodes: 1, share: 1 });
    // Its 50 of 50 used scale to 100 of 100 used: the window stays spent.
    expect(await admitted(a, 'k', 10)).toBe(0);
    clock.advance(60_000);
    expect(await admitted(a, 'k', 150)).toBe(100);
    await a.close();
  });

  it('makes no Redis call on the decision path', async () => {
    const a = dividedLimiterOn({
      rules: tokenBucket({ capacity: 1_000_000, refillPerSecond: 1_000_000 }),
      redis: redis().redis,
      prefix: prefix(),
      heartbeatMs: 60_000,
    });
    await membership(a, (e) => e.nodes === 1);
    const before = await evalCalls(redis().redis);
    for (let i = 0; i < 20_000; i++) await a.tryAcquire(`k${i % 100}`);
    expect(await evalCalls(redis().redis)).toBe(before);
    await a.close();
  });

  it('validates its options', () => {
    const r = redis().redis;
    expect(() =>
      dividedLimiterOn({ rules: tokenBucket({ capacity: 1, refillPerSecond: 1 }), redis: r, share: 'fair' as never }),
    ).toThrow(SluiceRangeError);
    expect(() =>
      dividedLimiterOn({ rules: tokenBucket({ capacity: 1, refillPerSecond: 1 }), redis: r, heartbeatMs: -1 }),
    ).toThrow(/heartbeatMs must be a finite number > 0, got -1/);
    expect(() =>
      dividedLimiterOn({ rules: tokenBucket({ capacity: 1, refillPerSecond: 1 }), redis: r, assumedNodes: 0.5 }),
    ).toThrow(/assumedNodes must be an integer >= 1/);
    expect(() =>
      dividedLimiterOn({ rules: tokenBucket({ capacity: 1, refillPerSecond: 1 }), redis: r, nodeId: 'a b' }),
    ).toThrow(/nodeId must be/);
  });
});
