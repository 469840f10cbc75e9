/**
 * membership.lua on its own, against a real Redis: the fleet summary divides the limit as divideShares does
 * (a differential property), a heartbeat's cost and reply do not grow with the fleet (counted in Redis
 * commands, not timed), a 100,000-node fleet is summarised without unpacking it, joins and leaves are seen at
 * once, and every limiter's fleet lives in a Cluster slot of its own.
 */
import { toConnection } from '@sluice/redis/store-kit';
import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type FleetSummary, heartbeat, membershipKeys } from '../../packages/hybrid/src/membership.js';
import { membershipScript } from '../../packages/hybrid/src/scripts.js';
import { type ShareMode, divideShares, shareFromSummary } from '../../packages/hybrid/src/shares.js';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
let n = 0;
const prefix = () => `membership${Date.now()}-${n++}`;
const LIVE_MS = 3_000;
const INTERVAL_MS = 1_000;

/** One node's heartbeat to one limiter's fleet at `now` on the client clock. */
async function beat(
  p: string,
  nodeId: string,
  nowMs: number,
  demand: number,
  limitPerSecond: number,
  leaving = false,
): Promise<FleetSummary> {
  const [summary] = await heartbeat(toConnection(redis().redis), {
    nodeId,
    liveMs: LIVE_MS,
    intervalMs: INTERVAL_MS,
    nowMs,
    leaving,
    limiters: [{ prefix: p, rule: 'fw', limitPerSecond, demand }],
  });
  return summary as FleetSummary;
}

/** Calls of each Redis command since the last RESETSTAT, the scripts' own commands included. */
async function commandCalls(): Promise<Map<string, number>> {
  const info = await redis().redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) calls.set(m[1] as string, Number(m[2]));
  for (const admin of ['info', 'config|resetstat', 'evalsha', 'eval', 'script|load']) calls.delete(admin);
  return calls;
}

const total = (calls: Map<string, number>) => [...calls.values()].reduce((a, b) => a + b, 0);

describe('membership.lua', () => {
  it('its summary gives every node the share divideShares gives it (any fleet, demands and limit; both modes)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.constant(0),
            fc.integer({ min: 0, max: 3_000 }),
            fc.double({ min: 0, max: 5_000, noNaN: true, noDefaultInfinity: true }),
          ),
          { minLength: 1, maxLength: 30 },
        ),
        fc.integer({ min: 1, max: 10_000 }),
        fc.constantFrom<ShareMode>('equal', 'demand'),
        async (demands, limit, mode) => {
          const p = prefix();
          const t = 1_000_000;
          for (const [i, d] of demands.entries()) await beat(p, `n${i}`, t, d, limit);
          // The first heartbeat of the next interval divides again, over every node's demand.
          const summaries: FleetSummary[] = [];
          for (const [i, d] of demands.entries()) summaries.push(await beat(p, `n${i}`, t + INTERVAL_MS, d, limit));
          const expected = divideShares(
            mode,
            demands.map((demand, i) => ({ id: `n${i}`, demand })),
            limit,
          );
          for (const [i, d] of demands.entries()) {
            expect(summaries[i]).toEqual(summaries[0]);
            expect(summaries[i]?.nodes).toBe(demands.length);
            const share = shareFromSummary(mode, summaries[i] as FleetSummary, d, limit);
            expect(share).toBeCloseTo(expected.get(`n${i}`) as number, 9);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a heartbeat costs Redis the same, in commands, CPU and reply bytes, whether the fleet has 64 nodes or 512', async () => {
    const r = redis().redis;
    const measured: { commands: Map<string, number>; divide: Map<string, number>; usPerBeat: number; bytes: number }[] =
      [];
    for (const size of [64, 512]) {
      const p = prefix();
      const t = 5_000_000 + size;
      const keys = membershipKeys(p, 'fw');
      const round = (now: number) =>
        Promise.all(Array.from({ length: size }, (_, i) => beat(p, `n${i}`, now, i % 50, 10_000)));
      await round(t); // every node joins
      await round(t + INTERVAL_MS); // the interval's division, then the others' heartbeats
      await r.config('RESETSTAT');
      await beat(p, 'n0', t + INTERVAL_MS + 1, 0, 10_000);
      const commands = await commandCalls();
      await r.config('RESETSTAT');
      await beat(p, 'n0', t + 2 * INTERVAL_MS, 0, 10_000); // the next interval's division, once for the fleet
      const divide = await commandCalls();
      // Redis CPU per heartbeat: 20 heartbeats of every node within one interval, from Redis's own accounting.
      await r.config('RESETSTAT');
      for (let k = 1; k <= 20; k++) await round(t + 2 * INTERVAL_MS + k);
      let [calls, usec] = [0, 0];
      for (const m of (await r.info('commandstats')).matchAll(/cmdstat_(?:evalsha|fcall):calls=(\d+),usec=(\d+)/g)) {
        calls += Number(m[1]);
        usec += Number(m[2]);
      }
      const usPerBeat = usec / calls;
      const raw = (await r.evalsha(
        membershipScript().sha1,
        3,
        ...keys,
        'n1',
        String(LIVE_MS),
        String(t + 2 * INTERVAL_MS + 21),
        '0',
        String(INTERVAL_MS),
        '10000',
        '1',
      )) as string[];
      expect(raw).toHaveLength(3);
      measured.push({ commands, divide, usPerBeat, bytes: raw.join('').length });
    }
    const [small, large] = measured as [(typeof measured)[0], (typeof measured)[0]];
    console.table(
      measured.map((m, i) => ({
        nodes: [64, 512][i],
        'Redis us per heartbeat': m.usPerBeat.toFixed(2),
        'reply bytes': m.bytes,
      })),
    );
    expect(large.commands).toEqual(small.commands);
    expect(total(small.commands)).toBeLessThanOrEqual(8);
    // The division reads the fleet's demands a chunk of 1,000 at a time: one read for either fleet here.
    expect(large.divide.get('zrange')).toBe(1);
    expect(small.divide.get('zrange')).toBe(1);
    // 8 times the fleet: the whole membership read back would cost about 8 times as much (see the bench).
    expect(large.usPerBeat / small.usPerBeat).toBeLessThan(2);
    expect(large.bytes / small.bytes).toBeLessThan(1.5);
  });

  it('a 100,000-node fleet: the dead are dropped and the live divided in chunks, never unpacked whole', async () => {
    const r = redis().redis;
    const p = prefix();
    const [members, demandsKey] = membershipKeys(p, 'fw');
    const t = 9_000_000;
    const live = 60_000;
    const dead = 40_000;
    const demandOf = (i: number) => (i * 7919) % 400;
    for (let from = 0; from < live + dead; from += 10_000) {
      const seen: (string | number)[] = [];
      const asked: (string | number)[] = [];
      for (let i = from; i < from + 10_000; i++) {
        seen.push(i < live ? t : t - 10 * LIVE_MS, `n${i}`);
        asked.push(demandOf(i), `n${i}`);
      }
      await r.zadd(members as string, ...seen);
      await r.zadd(demandsKey as string, ...asked);
    }
    const limit = 10_000_000;
    const summary = await beat(p, 'newcomer', t, 300, limit);
    expect(summary.nodes).toBe(live + 1);
    expect(await r.zcard(demandsKey as string)).toBe(live + 1);
    const fleet = Array.from({ length: live }, (_, i) => ({ id: `n${i}`, demand: demandOf(i) }));
    fleet.push({ id: 'newcomer', demand: 300 });
    const expected = divideShares('demand', fleet, limit);
    for (const [id, demand] of [
      ['newcomer', 300],
      ['n1', demandOf(1)],
      ['n7', demandOf(7)],
    ] as const)
      expect(shareFromSummary('demand', summary, demand, limit)).toBeCloseTo(expected.get(id) as number, 9);
  });

  it('a node joining is counted at once; a node leaving is taken out at the next heartbeat of any node, even at the same instant', async () => {
    const p = prefix();
    const t = 2_000_000;
    expect((await beat(p, 'a', t, 10, 100)).nodes).toBe(1);
    expect((await beat(p, 'b', t, 10, 100)).nodes).toBe(2);
    expect((await beat(p, 'a', t + 1, 10, 100)).nodes).toBe(2);
    await beat(p, 'b', t + 1, 0, 100, true);
    expect((await beat(p, 'a', t + 2, 10, 100)).nodes).toBe(1);
    // A node unseen for longer than liveMs is dropped by the next interval's division.
    expect((await beat(p, 'c', t + 3, 10, 100)).nodes).toBe(2);
    expect((await beat(p, 'a', t + 3 + LIVE_MS + 1, 10, 100)).nodes).toBe(1);
    // The keys expire after the last node goes quiet.
    for (const key of membershipKeys(p, 'fw')) {
      const ttl = await redis().redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2 * LIVE_MS);
    }
  });

  it('one of the sets lost (an evicting Redis): the summary stays an equal split at most until the nodes refill it', async () => {
    const p = prefix();
    const t = 4_000_000;
    for (const node of ['a', 'b', 'c', 'd']) await beat(p, node, t, 5, 100);
    await redis().redis.del(membershipKeys(p, 'fw')[0]);
    const summary = await beat(p, 'a', t + INTERVAL_MS, 5, 100);
    expect(summary.nodes).toBe(1);
    expect(summary.level).toBeGreaterThan(0);
    expect(shareFromSummary('demand', summary, 5, 100)).toBeLessThanOrEqual(1);
    for (const node of ['b', 'c', 'd']) await beat(p, node, t + INTERVAL_MS, 5, 100);
    const healed = await beat(p, 'a', t + 2 * INTERVAL_MS, 5, 100);
    expect(healed.nodes).toBe(4);
    expect(shareFromSummary('demand', healed, 5, 100)).toBeCloseTo(0.25, 9);
  });

  it('one call answers several limiters of one slot, each its own fleet', async () => {
    const p = prefix();
    const t = 3_000_000;
    const conn = toConnection(redis().redis);
    const call = (nodeId: string, rules: string[]) =>
      heartbeat(conn, {
        nodeId,
        liveMs: LIVE_MS,
        intervalMs: INTERVAL_MS,
        nowMs: t,
        leaving: false,
        limiters: rules.map((rule) => ({ prefix: p, rule, limitPerSecond: 1_000, demand: 100 })),
      });
    await call('a', ['x', 'y']);
    const [x, y] = await call('b', ['x', 'y']);
    const [z] = await call('b', ['z']);
    expect([x?.nodes, y?.nodes, z?.nodes]).toEqual([2, 2, 1]);
  });

  it("each limiter's fleet lives in a slot of its own: limiters spread over a Cluster, a fleet's keys never apart", () => {
    const slots = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const keys = membershipKeys(`svc${i % 20}`, `rule${Math.floor(i / 20)}`);
      const slot = calculateSlot(keys[0]);
      for (const key of keys) expect(calculateSlot(key)).toBe(slot);
      slots.add(slot);
    }
    expect(slots.size).toBeGreaterThan(180);
  });
});
