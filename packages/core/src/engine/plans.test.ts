import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Algorithm } from '../algorithms/algorithm.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { gcra } from '../algorithms/gcra.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

const PLANS = ['free', 'pro', 'team'] as const;
type Plan = (typeof PLANS)[number];

const switchesArb = fc.array(
  fc.record({
    advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 })),
    plan: fc.constantFrom<Plan>(...PLANS),
    permits: fc.integer({ min: 1, max: 4 }),
  }),
  { maxLength: 80 },
);
const limitsArb = fc.tuple(
  fc.integer({ min: 1, max: 12 }),
  fc.integer({ min: 1, max: 12 }),
  fc.integer({ min: 1, max: 12 }),
);

describe('plans on the memory store', () => {
  it('a plan switch never admits more than the new plan allows in any window, and never resets usage (property)', async () => {
    const windows: Array<[string, (limit: number, windowMs: number) => Algorithm, boolean]> = [
      ['fixedWindow', (limit, windowMs) => fixedWindow({ limit, windowMs }), false],
      ['slidingWindowCounter', (limit, windowMs) => slidingWindowCounter({ limit, windowMs }), false],
      ['slidingWindowLog', (limit, windowMs) => slidingWindowLog({ limit, windowMs }), true],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...windows),
        limitsArb,
        fc.integer({ min: 100, max: 1_500 }),
        switchesArb,
        async ([, make, sliding], limits, windowMs, steps) => {
          const clock = new ManualClock(9_000_000);
          const limitOf = (plan: Plan) => limits[PLANS.indexOf(plan)] as number;
          // No names: each plan's unnamed rule of this shape is one state across plans.
          const limiter = createLimiter({
            plans: { free: make(limits[0], windowMs), pro: make(limits[1], windowMs), team: make(limits[2], windowMs) },
            clock,
          });
          const admitted: Array<{ at: number; permits: number }> = [];
          for (const step of steps) {
            clock.advance(step.advanceMs);
            const now = clock.now();
            const d = await limiter.tryAcquire('acct', { plan: step.plan, permits: step.permits });
            expect(d.plan).toBe(step.plan);
            if (!d.allowed) continue;
            admitted.push({ at: now, permits: step.permits });
            // Everything this key was admitted in the window this grant counts in, under any plan, fits this plan.
            const inWindow = admitted
              .filter((a) =>
                sliding ? a.at > now - windowMs : Math.floor(a.at / windowMs) === Math.floor(now / windowMs),
              )
              .reduce((sum, a) => sum + a.permits, 0);
            expect(inWindow).toBeLessThanOrEqual(limitOf(step.plan));
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("buckets: a switch keeps the bucket's level, capped at the new capacity (property)", async () => {
    const buckets: Array<(capacity: number) => Algorithm> = [
      (capacity) => tokenBucket({ capacity, refillPerSecond: capacity / 2, maxDebt: 0 }),
      (capacity) => gcra({ permitsPerSecond: capacity / 2, burst: capacity }),
      (capacity) => leakyBucket({ capacity, leakPerSecond: capacity / 2 }),
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...buckets), limitsArb, switchesArb, async (make, limits, steps) => {
        const clock = new ManualClock(0);
        const limiter = createLimiter({
          plans: { free: make(limits[0]), pro: make(limits[1]), team: make(limits[2]) },
          clock,
        });
        for (const step of steps) {
          clock.advance(step.advanceMs);
          const before = await limiter.peek('acct', { plan: step.plan });
          expect(before.remaining).toBeLessThanOrEqual(limits[PLANS.indexOf(step.plan)] as number);
          const d = await limiter.tryAcquire('acct', { plan: step.plan, permits: step.permits });
          // The same level whichever plan reads it: what one plan took, another sees taken.
          if (d.allowed) expect(d.remaining).toBe(Math.max(0, before.remaining - step.permits));
        }
      }),
      { numRuns: 200 },
    );
  });

  it("a part-filled bucket: tokens kept above a smaller plan's capacity are capped there, never forgotten, and its denial leaves them for the larger plan", async () => {
    const clock = new ManualClock(0);
    const bucket = (capacity: number) =>
      tokenBucket({ name: 'b', capacity, refillPerSecond: capacity / 20, initialPermits: 0, maxDebt: 0 });
    const limiter = createLimiter({ plans: { small: bucket(1), large: bucket(4) }, clock });
    await limiter.penalize('k', 1, { plan: 'large' }); // -1 tokens
    await limiter.refund('k', 5, { plan: 'large' }); // 4 tokens: full at the larger capacity
    // At capacity 1 the 4 tokens read as a full bucket (1), not as a forgotten one (initial 0).
    expect((await limiter.peek('k', { plan: 'small' })).remaining).toBe(1);
    // A request that can never fit the small plan is refused there, and changes nothing.
    expect((await limiter.tryAcquire('k', { plan: 'small', permits: 4 })).retryAfterMs).toBe(Infinity);
    expect((await limiter.peek('k', { plan: 'large' })).remaining).toBe(4);
  });

  it('the plan resolver picks the plan; a call may name one; the first plan is the default', async () => {
    const clock = new ManualClock(0);
    const tiers = new Map([['acme', 'pro']]);
    const limiter = createLimiter({
      plans: { free: fixedWindow({ limit: 2, windowMs: 60_000 }), pro: fixedWindow({ limit: 5, windowMs: 60_000 }) },
      plan: async (key) => tiers.get(key) ?? 'free',
      clock,
    });
    expect(await limiter.tryAcquire('acme')).toMatchObject({
      allowed: true,
      remaining: 4,
      limit: 5,
      plan: 'pro',
      rule: 'fw-1m',
    });
    expect(await limiter.tryAcquire('nobody')).toMatchObject({ allowed: true, remaining: 1, limit: 2, plan: 'free' });
    expect(await limiter.tryAcquire('acme', { plan: 'free' })).toMatchObject({
      allowed: true,
      remaining: 0,
      plan: 'free',
    });
    // Downgraded past its new limit: denied until the window resets, not reset by the switch.
    expect(await limiter.tryAcquire('acme', { plan: 'free' })).toMatchObject({ allowed: false, plan: 'free' });
    expect(limiter.rules.map((r) => r.name)).toEqual(['fw-1m']);
    expect(Object.keys(limiter.plans ?? {})).toEqual(['free', 'pro']);
    const plain = createLimiter({ plans: { only: tokenBucket({ capacity: 2, refillPerSecond: 1 }) }, clock });
    expect(await plain.tryAcquire('k')).toMatchObject({ plan: 'only', rule: 'tb' });
  });

  it('the three-window policy written the natural way works, alone and as a plan', async () => {
    const clock = new ManualClock(0);
    const policy = () => [
      fixedWindow({ limit: 200, windowMs: 10_000 }),
      fixedWindow({ limit: 5_000, windowMs: 3_600_000 }),
      fixedWindow({ limit: 20_000, windowMs: 86_400_000 }),
    ];
    const alone = createLimiter({ rules: policy(), clock });
    expect((await alone.tryAcquire('u')).rules?.map((r) => r.name)).toEqual([
      'fw-200-per-10s',
      'fw-5000-per-1h',
      'fw-20000-per-1d',
    ]);
    const planned = createLimiter({
      plans: { free: policy(), pro: [fixedWindow({ limit: 2_000, windowMs: 10_000 })] },
      clock,
    });
    expect((await planned.tryAcquire('u')).rules?.map((r) => r.name)).toEqual(['fw-10s', 'fw-1h', 'fw-1d']);
    expect((await planned.tryAcquire('u', { plan: 'pro' })).remaining).toBe(1_998);
  });

  it('reset forgets the key under every plan; bans hold whatever the plan', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      plans: {
        free: fixedWindow({ limit: 1, windowMs: 60_000 }),
        pro: [fixedWindow({ limit: 3, windowMs: 60_000 }), tokenBucket({ capacity: 3, refillPerSecond: 0.01 })],
      },
      clock,
    });
    await limiter.tryAcquire('k', { plan: 'pro', permits: 3 });
    await limiter.block('k', 1_000);
    expect(await limiter.tryAcquire('k', { plan: 'free' })).toMatchObject({ allowed: false, blocked: true });
    expect(await limiter.tryAcquire('k', { plan: 'pro' })).toMatchObject({ allowed: false, blocked: true });
    await limiter.reset('k');
    expect((await limiter.tryAcquire('k', { plan: 'pro' })).remaining).toBe(2);
  });

  it('bad plans: empty, one name for two kinds of state, two unnamed rules of one shape, unknown or bad plan names: typed errors', async () => {
    const fw = () => fixedWindow({ limit: 1, windowMs: 1_000 });
    expect(() => createLimiter({ plans: {} })).toThrow(SluiceRangeError);
    expect(() => createLimiter({ plans: [] as never })).toThrow(SluiceTypeError);
    expect(() => createLimiter({ plans: { free: [] } })).toThrow(SluiceRangeError);
    expect(() => createLimiter({ plans: { free: 'fw' as never } })).toThrow(SluiceTypeError);
    expect(() => createLimiter({ plans: { 'a b': fw() } })).toThrow(SluiceRangeError);
    expect(() =>
      createLimiter({
        plans: {
          free: fixedWindow({ limit: 1, windowMs: 1_000, name: 'x' }),
          pro: tokenBucket({ capacity: 1, refillPerSecond: 1, name: 'x' }),
        },
      }),
    ).toThrow(/share state across plans/);
    expect(() =>
      createLimiter({
        plans: {
          free: fixedWindow({ limit: 1, windowMs: 1_000, name: 'x' }),
          pro: fixedWindow({ limit: 1, windowMs: 2_000, name: 'x' }),
        },
      }),
    ).toThrow(SluiceRangeError);
    expect(() =>
      createLimiter({
        plans: {
          free: [leakyBucket({ capacity: 1, leakPerSecond: 1 })],
          pro: [leakyBucket({ capacity: 1, leakPerSecond: 1, mode: 'shape', name: 'lb' })],
        },
      }),
    ).toThrow(SluiceRangeError);
    expect(() =>
      createLimiter({
        plans: {
          free: [tokenBucket({ capacity: 1, refillPerSecond: 1 }), tokenBucket({ capacity: 2, refillPerSecond: 1 })],
        },
      }),
    ).toThrow(/two rules named "tb"/);
    expect(() => createLimiter({ rules: fw(), plans: { free: fw() } } as never)).toThrow(SluiceTypeError);
    expect(() => createLimiter({ rules: fw(), plan: () => 'free' } as never)).toThrow(SluiceTypeError);
    expect(() => createLimiter({ plans: { free: fw() }, plan: 'free' as never })).toThrow(SluiceTypeError);

    const clock = new ManualClock(0);
    const store = memoryStore({ clock });
    const limiter = createLimiter({
      plans: { free: fw(), pro: fw() },
      plan: (key) => (key === 'odd' ? 'gold' : 'pro'),
      store,
    });
    await expect(limiter.tryAcquire('k', { plan: 'gold' })).rejects.toBeInstanceOf(SluiceRangeError);
    await expect(limiter.tryAcquire('k', { plan: 7 as never })).rejects.toBeInstanceOf(SluiceTypeError);
    await expect(limiter.tryAcquire('odd')).rejects.toMatchObject({ argument: 'plan', value: 'gold' });
    expect(store.size).toBe(0); // nothing consumed by any refused call
    const noPlans = createLimiter({ rules: fw(), clock });
    await expect(noPlans.tryAcquire('k', { plan: 'free' })).rejects.toBeInstanceOf(SluiceRangeError);
  });

  it('a call waiting on an async plan resolver when the limiter closes fails as closed, and consumes nothing', async () => {
    const store = memoryStore();
    let answer: (plan: string) => void = () => {};
    const resolving = new Promise<string>((resolve) => {
      answer = resolve;
    });
    const free = fixedWindow({ name: 'free', limit: 5, windowMs: 60_000 });
    const limiter = createLimiter({ plans: { free }, plan: () => resolving, store });
    const calls = [
      limiter.tryAcquire('k', { maxWaitMs: 1_000 }),
      limiter.acquire('k'),
      limiter.peek('k'),
      limiter.penalize('k', 1),
    ].map((call) =>
      call.then(
        () => 'done',
        (error: { code?: string }) => error.code,
      ),
    );
    await limiter.close();
    answer('free');
    // Before: the decisions went on after close(), granted, and the key had 3 of 5 left.
    expect(await Promise.all(calls)).toEqual(['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED']);
    const after = createLimiter({ plans: { free }, store });
    expect((await after.peek('k')).remaining).toBe(5);
    await after.close();
    await store.close();
  });
});
