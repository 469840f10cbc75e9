/**
 * Divided mode in one process against a real Redis: conservative start, shares from heartbeats, scaling
 * (not refilling) on a membership change, the reserve (what a node past its share draws, never more than the
 * limit in all, refunds and hand-backs), and no Redis call on the decision path within a node's share.
 */
import { ManualClock, SluiceRangeError, tokenBucket } from '@sluice/core';
import type { DividedStore, MembershipEvent } from '@sluice/hybrid';
import { membershipKeys } from '@sluice/redis/internal';
import { dividedLimiterOn, type OwnedLimiter } from '../harness/hybrid.js';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { nextEvent } from '../harness/events.js';
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

/**
 * One node of a divided fleet on `p`: a bucket of 100 that refills a permit in about 3 hours, so what a node
 * admits is what its share (and the reserve) holds. The fleet's founder expects no other node (assumedNodes 1),
 * so it holds a fleet of one's share from the first division.
 */
function fleetNode(p: string, id: string, o: { heartbeatMs: number; reserve: number }): OwnedLimiter<DividedStore> {
  return dividedLimiterOn({
    rules: tokenBucket({ capacity: 100, refillPerSecond: 0.0001 }),
    redis: redis().redis,
    prefix: p,
    nodeId: id,
    assumedNodes: 1,
    ...o,
  });
}

describe('dividedLimiter', () => {
  it('reserve 0: starts with a conservative share, then takes its share from the membership', async () => {
    const clock = new ManualClock(0);
    const a = dividedLimiterOn({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }),
      redis: redis().redis,
      prefix: prefix(),
      clock,
      heartbeatMs: 50,
      nodeId: 'a',
      reserve: 0,
    });
    const seen = membership(a, (e) => e.nodes === 1);
    // Before any heartbeat has answered: 100 / assumedNodes (10).
    expect(await admitted(a, 'k', 20)).toBe(10);
    // The fleet's first division is made for the fleet its founder expects (assumedNodes): a tenth, not the
    // whole limit while nine more nodes may be on their way (a later division gives it the rest).
    expect(await seen).toMatchObject({ nodes: 1, share: 0.1 });
    expect(await admitted(a, 'k', 5)).toBe(0);
    // A second refills a permit at a tenth of 10 per second.
    clock.advance(1_000);
    expect(await admitted(a, 'k', 20)).toBe(1);
    await a.close();
  });

  it("'equal': two nodes each enforce half; when one leaves, the other takes the whole limit", async () => {
    const p = prefix();
    const make = (id: string) => fleetNode(p, id, { heartbeatMs: 50, reserve: 0 });
    const a = make('a');
    const b = make('b');
    const half = (l: OwnedLimiter<DividedStore>) => membership(l, (e) => e.nodes === 2 && e.share === 0.5);
    await Promise.all([half(a), half(b)]);
    expect(await admitted(a, 'k', 80)).toBe(50);
    // b joined a fleet a founded: a key it meets starts spent (a may have spent it), refilling at b's share.
    expect(await admitted(b, 'k', 80)).toBe(0);
    const alone = membership(a, (e) => e.nodes === 1 && e.share === 1);
    await b.close(); // leaves the membership at once
    expect(await alone).toEqual({ prefix: p, rule: 'tb-100-0.0001ps', nodes: 1, share: 1 });
    // Its 0 of 50 left scale to 0 of 100: the bucket stays spent.
    expect(await admitted(a, 'k', 10)).toBe(0);
    await a.close();
  });

  it('with a reserve: a new fleet holds its shares at once; a node joining it holds none until two divisions allocate it', async () => {
    const p = prefix();
    const make = (id: string) => fleetNode(p, id, { heartbeatMs: 50, reserve: 0.2 });
    const a = make('a');
    // Its first decision waits for its first heartbeat: alone in a new fleet, it holds 80 at once, and the
    // reserve has 20 more.
    expect(await admitted(a, 'k', 150)).toBe(100);
    // A second node joins: it holds nothing until two divisions allocate it, and the reserve is spent.
    const b = make('b');
    expect(await admitted(b, 'k', 50)).toBe(0);
    await Promise.all([
      membership(a, (e) => e.nodes === 2 && e.share === 0.4),
      membership(b, (e) => e.nodes === 2 && e.share === 0.4),
    ]);
    // a's spent bucket scales down spent; b meets the key for the first time, and starts it spent: it joined
    // a fleet whose other node may have spent it (a full bucket here would admit 40 more than the limit).
    expect(await admitted(a, 'k', 50)).toBe(0);
    expect(await admitted(b, 'k', 50)).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });

  it('with a reserve: a refund goes back where the grant came from; a closing node hands its unspent draws back', async () => {
    const p = prefix();
    const make = (id: string) => fleetNode(p, id, { heartbeatMs: 60_000, reserve: 0.5 });
    const a = make('a');
    // Its share (50) first, then the reserve (50): a refund of a reserve grant goes back to the draw.
    expect(await admitted(a, 'k', 50)).toBe(50);
    const drawn = await a.tryAcquire('k');
    expect(drawn.allowed).toBe(true);
    await a.refund('k', 1, { decision: drawn });
    expect(await admitted(a, 'k', 60)).toBe(50);
    // b joins within the interval: no share yet, and the key's reserve is spent.
    const b = make('b');
    expect(await admitted(b, 'k', 10)).toBe(0);
    // b draws 30 of another key's reserve and is refunded 10 (held again); closing, it hands those 10 back.
    const grants = [];
    for (let i = 0; i < 30; i++) grants.push(await b.tryAcquire('k2'));
    expect(grants.every((g) => g.allowed)).toBe(true);
    for (const grant of grants.slice(0, 10)) await b.refund('k2', 1, { decision: grant });
    await b.close();
    const c = make('c');
    expect(await admitted(c, 'k2', 60)).toBe(30);
    await Promise.all([a.close(), c.close()]);
  });

  it('makes no Redis call on the decision path within its share', async () => {
    const a = dividedLimiterOn({
      rules: tokenBucket({ capacity: 1_000_000, refillPerSecond: 1_000_000 }),
      redis: redis().redis,
      prefix: prefix(),
      // The first heartbeat answers at once (a fleet of one: its share at once); the next is 10 s away, so the
      // count below is the decisions' alone (at 50 ms a loaded machine's 20,000 decisions took long enough for
      // a heartbeat to land among them).
      heartbeatMs: 10_000,
      assumedNodes: 1,
    });
    await membership(a, (e) => e.nodes === 1 && e.share === 0.7);
    const before = await evalCalls(redis().redis);
    for (let i = 0; i < 20_000; i++) await a.tryAcquire(`k${i % 100}`);
    expect(await evalCalls(redis().redis)).toBe(before);
    await a.close();
  });

  it('a fleet heartbeating faster than Redis should be asked is warned, naming heartbeatMs and what it needs', async () => {
    const p = prefix();
    const [members, demands] = membershipKeys(p, 'tb-100-10ps');
    // 600 other live nodes, as Redis would hold them: with this node, 601 x 1000 / 100 ms = 6,010 a second.
    const now = Date.now();
    const seen: (string | number)[] = [];
    for (let i = 0; i < 600; i++) seen.push(now, `other-${i}`);
    await redis().redis.zadd(members, ...seen);
    await redis().redis.zadd(demands, ...seen.map((v, i) => (i % 2 === 0 ? 1 : v)));
    const warned = new Promise<Error & { code?: string }>((resolve) => {
      const on = (w: Error & { code?: string }) => {
        if (w.code !== 'SLUICE_FLEET_HEARTBEATS') return;
        process.off('warning', on);
        resolve(w);
      };
      process.on('warning', on);
    });
    const a = dividedLimiterOn({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }),
      redis: redis().redis,
      prefix: p,
      heartbeatMs: 100,
    });
    const warning = await warned;
    expect(warning.message).toMatch(/601 nodes heartbeating every 100 ms \(heartbeatMs\)/);
    expect(warning.message).toMatch(/heartbeatMs >= 121/);
    await a.close();
  });

  it('one nodeId given to two live processes: the second to notice goes on under its own id (NODE_ID_REUSED); two shares, never one held twice', async () => {
    const p = prefix();
    const [a, b] = [
      fleetNode(p, 'pod-7', { heartbeatMs: 50, reserve: 0 }),
      fleetNode(p, 'pod-7', { heartbeatMs: 50, reserve: 0 }),
    ];
    const reused = Promise.race(
      [a, b].map((l) =>
        nextEvent(l.store, 'store-error', (e: Error & { code?: string }) => e.code === 'NODE_ID_REUSED'),
      ),
    );
    const halves = [a, b].map((l) => membership(l, (e) => e.nodes === 2 && e.share === 0.5));
    // Each asks for its share (a heartbeat registers the limiter's fleet at its first decision).
    await Promise.all([a.tryAcquire('k'), b.tryAcquire('k')]);
    const [error] = (await reused) as [Error];
    await Promise.all(halves);
    const ids = [a.store.nodeId, b.store.nodeId].sort();
    expect(ids[0]).toBe('pod-7');
    expect(ids[1]).toMatch(/^pod-7\.[0-9a-f]{12}$/);
    expect(error.message).toContain(JSON.stringify(ids[1]));
    // Each holds half: under one shared id both would have been counted as one node holding the whole limit.
    await a.close();
    await b.close();
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
    for (const reserve of [-0.1, 0.95, Number.NaN, '0.2'])
      expect(() =>
        dividedLimiterOn({
          rules: tokenBucket({ capacity: 1, refillPerSecond: 1 }),
          redis: r,
          reserve: reserve as number,
        }),
      ).toThrow(/reserve must be a number in 0\.\.0\.9/);
  });
});
