/**
 * Calendar quotas on Redis: the same timelines as memory, bit for bit, across years, zones, periods and
 * anchors (the zone's rules travel with the rule, Redis has no time zone data); a key that expires with its
 * window; a monthly quota beside a per-second burst; plans and live limits keeping what a month used; leased
 * and divided mode counting calendar windows.
 */
import { type Algorithm, ManualClock, calendarWindow, createLimiter, memoryStore, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { useTestRedis } from '../harness/use-redis.js';
import { admitted } from '../hybrid/admitted.js';
import type { Step } from './arbitraries.js';
import { decideBoth, onRedis } from './differential.js';

const testRedis = useTestRedis();
let n = 0;
const prefix = () => `cal${Date.now()}-${n++}`;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const ZONES = ['UTC', 'Europe/Berlin', 'America/Sao_Paulo', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/New_York'];

/** Steps from a millisecond to six weeks apart: timelines that cross boundaries, DST changes and leap days. */
const calendarTimeline: fc.Arbitrary<Step[]> = fc.array(
  fc.record({
    dtMs: fc.oneof(
      fc.integer({ min: 0, max: 5_000 }),
      fc.integer({ min: 0, max: 30 * HOUR }),
      fc.integer({ min: 0, max: 42 * DAY }),
    ),
    requests: fc.array(
      fc.record({
        key: fc.constantFrom('a', 'b'),
        permits: fc.integer({ min: 1, max: 4 }),
        maxWaitMs: fc.constant(0),
        peek: fc.boolean().map((b) => b && Math.random() < 0.2),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  }),
  { minLength: 1, maxLength: 30 },
);

const calendarRule: fc.Arbitrary<Algorithm> = fc
  .record({
    limit: fc.integer({ min: 1, max: 12 }),
    period: fc.constantFrom('day' as const, 'week' as const, 'month' as const, 'year' as const),
    timeZone: fc.constantFrom(...ZONES),
    anchor: fc.option(
      fc.record({ day: fc.integer({ min: 1, max: 31 }), month: fc.integer({ min: 1, max: 12 }), hour: fc.nat(23) }),
      { nil: undefined },
    ),
  })
  .map(({ limit, period, timeZone, anchor }) =>
    calendarWindow({
      limit,
      period,
      timeZone,
      ...(anchor === undefined
        ? {}
        : {
            anchor: `2028-${String(anchor.month).padStart(2, '0')}-${String(Math.min(anchor.day, 28 + (anchor.month === 2 ? 1 : 2))).padStart(2, '0')}T${String(anchor.hour).padStart(2, '0')}:00`,
          }),
    }),
  );

describe('calendarWindow on Redis', () => {
  it('timelines across 2001-2099 in six zones: memory and Redis decide bit for bit (client ManualClock)', async () => {
    await fc.assert(
      fc.asyncProperty(
        calendarRule,
        fc.integer({ min: Date.UTC(2001, 5, 1), max: Date.UTC(2099, 0, 1) }),
        calendarTimeline,
        async (rule, start, steps) => {
          const { memory, redis } = await decideBoth(onRedis(testRedis().redis), [rule], start, steps, false);
          expect(redis).toEqual(memory);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('the state key expires with its window (plus the second every state keeps), on Redis’s own clock', async () => {
    const { redis } = testRedis();
    const store = redisStore({ redis });
    const p = prefix();
    const limiter = createLimiter({
      rules: calendarWindow({ limit: 5, period: 'day', name: 'daily' }),
      store,
      prefix: p,
    });
    const decision = await limiter.tryAcquire('k');
    // The key's only state: its rule's (state keys name the rule by a short id after the hash tag).
    const [key] = await redis.keys(`${p}{k}*`);
    const pttl = await redis.pttl(key as string);
    const [seconds] = await redis.time();
    const toMidnight = DAY - ((Number(seconds) * 1000) % DAY);
    // The reply's reset is the time to midnight UTC, and the key lives that long and a second more.
    expect(Math.abs(decision.resetAfterMs - toMidnight)).toBeLessThan(2_000);
    expect(pttl).toBeGreaterThan(decision.resetAfterMs + 1_000 - 200);
    expect(pttl).toBeLessThanOrEqual(Math.ceil(decision.resetAfterMs) + 1_000);
    await limiter.close();
    await store.close();
  });

  it.each(['memory', 'redis'] as const)(
    '%s: a monthly quota beside a per-second burst: all or nothing, the burst’s refusals cost the month nothing',
    async (where) => {
      // 2026-03-31 21:59:58 UTC: 23:59:58 in Berlin (CEST), two seconds before April.
      const clock = new ManualClock(Date.UTC(2026, 2, 31, 21, 59, 58));
      const store = where === 'memory' ? memoryStore({ clock }) : redisStore({ redis: testRedis().redis, clock });
      const limiter = createLimiter({
        rules: [
          calendarWindow({ limit: 5, period: 'month', timeZone: 'Europe/Berlin', name: 'monthly' }),
          tokenBucket({ capacity: 2, refillPerSecond: 2, name: 'burst' }),
        ],
        store,
        prefix: prefix(),
      });
      expect(await admitted(limiter, 'k', 3)).toBe(2);
      const denied = await limiter.tryAcquire('k');
      expect(denied.rule).toBe('burst');
      expect(denied.rules?.find((r) => r.name === 'monthly')?.remaining).toBe(3);
      clock.advance(1_000);
      expect(await admitted(limiter, 'k', 3)).toBe(2);
      // 21:59:59.9: 4 of 5 used, one left in March, whatever the burst holds.
      clock.advance(900);
      expect(await admitted(limiter, 'k', 3)).toBe(1);
      expect((await limiter.tryAcquire('k')).rule).toBe('monthly');
      // Into April in Berlin (22:00 UTC): the month's 5 again.
      clock.set(Date.UTC(2026, 2, 31, 22, 0, 0) + 500);
      const april = await limiter.tryAcquire('k');
      expect(april.allowed).toBe(true);
      expect(april.rules?.find((r) => r.name === 'monthly')).toMatchObject({
        remaining: 4,
        resetAfterMs: 30 * DAY - 500,
      });
      await limiter.close();
      await store.close();
    },
  );

  it('plans: a key keeps what it used this month when it changes plan (one unnamed monthly rule per plan)', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 15));
    const store = redisStore({ redis: testRedis().redis, clock });
    const limiter = createLimiter({
      plans: {
        free: calendarWindow({ limit: 3, period: 'month' }),
        pro: calendarWindow({ limit: 10, period: 'month' }),
      },
      store,
      prefix: prefix(),
    });
    let free = 0;
    for (let i = 0; i < 5; i++) if ((await limiter.tryAcquire('k', { plan: 'free' })).allowed) free++;
    expect(free).toBe(3);
    const pro = await limiter.tryAcquire('k', { plan: 'pro' });
    expect(pro).toMatchObject({ allowed: true, remaining: 6 });
    await limiter.close();
    await store.close();
  });

  it('live limits: a new monthly limit mid-month keeps what was used (raised, then lowered below it)', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 15));
    const store = redisStore({ redis: testRedis().redis, clock });
    const limiter = createLimiter({
      rules: calendarWindow({ limit: 5, period: 'month', timeZone: 'Asia/Kolkata', name: 'monthly' }),
      store,
      prefix: prefix(),
    });
    expect(await admitted(limiter, 'k', 4)).toBe(4);
    await limiter.reconfigure(calendarWindow({ limit: 8, period: 'month', timeZone: 'Asia/Kolkata', name: 'monthly' }));
    expect((await limiter.peek('k')).remaining).toBe(4);
    expect(await admitted(limiter, 'k', 10)).toBe(4);
    await limiter.reconfigure(calendarWindow({ limit: 6, period: 'month', timeZone: 'Asia/Kolkata', name: 'monthly' }));
    expect(await admitted(limiter, 'k', 3)).toBe(0);
    // December in Kolkata starts at 18:30 UTC on 30 November.
    clock.set(Date.UTC(2026, 10, 30, 18, 30));
    expect(await admitted(limiter, 'k', 10)).toBe(6);
    await limiter.close();
    await store.close();
  });

  it('leased mode: two nodes share a monthly quota, never more in all; leases die with the calendar month', async () => {
    const { redis } = testRedis();
    const p = prefix();
    // 23:00 UTC on 30 November is midnight on 1 December in Berlin.
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 20));
    const rule = () => calendarWindow({ limit: 40, period: 'month', timeZone: 'Europe/Berlin', name: 'monthly' });
    const a = leasedLimiterOn({ rules: rule(), redis, prefix: p, clock, targetMs: 60_000 });
    const b = leasedLimiterOn({ rules: rule(), redis, prefix: p, clock, targetMs: 60_000 });
    let total = 0;
    for (let round = 0; round < 10; round++) total += (await admitted(a, 'k', 5)) + (await admitted(b, 'k', 5));
    expect(total).toBeLessThanOrEqual(40);
    expect(total).toBeGreaterThanOrEqual(30);
    const last = await a.tryAcquire('k');
    if (last.allowed) total++;
    expect(last.resetAfterMs).toBe(3 * HOUR);
    clock.set(Date.UTC(2026, 10, 30, 23));
    const december = (await admitted(a, 'k', 30)) + (await admitted(b, 'k', 30));
    expect(december).toBeLessThanOrEqual(40);
    expect(december).toBeGreaterThanOrEqual(30);
    await a.close();
    await b.close();
  });

  it('divided mode: a node decides its share of a daily quota locally, the day ending at local midnight', async () => {
    const { redis } = testRedis();
    // 18:00 UTC: 23:30 in Kolkata, midnight at 18:30 UTC.
    const clock = new ManualClock(Date.UTC(2026, 10, 27, 18));
    const node = dividedLimiterOn({
      rules: calendarWindow({ limit: 20, period: 'day', timeZone: 'Asia/Kolkata', name: 'daily' }),
      redis,
      prefix: prefix(),
      clock,
      nodeId: 'solo',
      assumedNodes: 1,
      reserve: 0,
    });
    const today = await admitted(node, 'k', 30);
    expect(today).toBeGreaterThan(0);
    expect(today).toBeLessThanOrEqual(20);
    const denied = await node.tryAcquire('k');
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 30 * 60_000 });
    clock.set(Date.UTC(2026, 10, 27, 18, 30));
    expect(await admitted(node, 'k', 30)).toBe(today);
    await node.close();
  });
});
